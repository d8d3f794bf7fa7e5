"""Choosing a word vocabulary from the corpus, and saying when a corpus is too small for its
vocabulary.

A word vocabulary that keeps every word of a small text has thousands of entries seen once or
twice: a model cannot learn them, and it spends its softmax on them. `auto_min_freq` keeps the
words seen at least k times, with the smallest k that leaves at least `TOKENS_PER_ENTRY`
training tokens per vocabulary entry (every word of a large corpus; fewer of a small one).
`too_small_warning` is the line `prepare` prints when a split has fewer than
`MIN_TOKENS_PER_ENTRY` tokens per entry. `VocabCounting` is how a corpus counts and cuts its
char or word vocabulary.

Example:
  >>> auto_min_freq({"the": 150, "cat": 3, "zebra": 1}, num_tokens=154, specials=1)
  2
"""
import dataclasses
from typing import Mapping, Optional, Sequence

# Training tokens per vocabulary entry the automatic minimum count aims at.
TOKENS_PER_ENTRY = 40
# Below this many training tokens per vocabulary entry a corpus is too small for its vocabulary.
MIN_TOKENS_PER_ENTRY = 20


@dataclasses.dataclass(frozen=True)
class VocabCounting:
    """How a char or word corpus builds its vocabulary from its splits' counts.

    Attributes:
      count_splits: the splits whose symbols are counted (None: every split).
      specials: special symbols put first (words only), e.g. ("<eos>",).
      min_freq: keep symbols seen at least this often; None (words, no `max_size`, an
        `unk_symbol`): chosen from the corpus (`auto_min_freq`).
      max_size: cap of the vocabulary's size, specials included (None: no cap).
      unk_symbol: the symbol unknown ones become (None: none).
      unk_policy: "error" (an unknown symbol is an error) or "unk" (it becomes `unk_symbol`).
    """
    count_splits: Optional[Sequence[str]] = None
    specials: Sequence[str] = ()
    min_freq: Optional[int] = 0
    max_size: Optional[int] = None
    unk_symbol: Optional[str] = None
    unk_policy: str = "error"


def auto_min_freq(counts: Mapping, num_tokens: int, specials: int = 0,
                  tokens_per_entry: int = TOKENS_PER_ENTRY) -> int:
    """The smallest minimum count k >= 1 whose vocabulary has `tokens_per_entry` training
    tokens per entry.

    Args:
      counts: word -> count in the training split (special symbols excluded).
      num_tokens: the training split's tokens (special symbols such as <eos> included).
      specials: the number of special symbols the vocabulary adds (<eos>, <unk>).
      tokens_per_entry: the training tokens per entry to reach.

    Returns:
      The smallest k for which keeping the words with count >= k gives num_tokens /
      (kept + specials) >= `tokens_per_entry`; 1 (every word) when no k keeping a word does
      (a tiny corpus: `too_small_warning` says so).
    """
    by_count = sorted(counts.values())
    k, i = 1, 0
    while i < len(by_count) and num_tokens < tokens_per_entry * (len(by_count) - i + specials):
        k = by_count[i] + 1  # drop the words seen by_count[i] times
        while i < len(by_count) and by_count[i] < k:
            i += 1
    return k if i < len(by_count) else 1


def too_small_warning(split: str, num_tokens: int, vocab_size: int, level: str) -> Optional[str]:
    """'warning: ...' when `split` has fewer than `MIN_TOKENS_PER_ENTRY` tokens per vocabulary
    entry, else None."""
    if num_tokens >= MIN_TOKENS_PER_ENTRY * vocab_size:
        return None
    smaller = ("a smaller vocabulary (--min_freq, --max_size) or --level=char"
               if level == "word" else "a smaller vocabulary (--max_size)")
    return (f"warning: the corpus is too small for its vocabulary: the {split} split has "
            f"{num_tokens:,} tokens for {vocab_size:,} vocabulary entries "
            f"({num_tokens / max(vocab_size, 1):.1f} per entry, fewer than "
            f"{MIN_TOKENS_PER_ENTRY}); a model will hardly beat counting them. Use more text, "
            f"or {smaller}.")
