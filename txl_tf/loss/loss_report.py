"""How a loss is reported: its unit for the data's level, its text, its JSON fields, and the
verdict against the unigram baseline. Training (console lines, TensorBoard, train_summary.json)
and evaluation (evaluate.py's lines and JSON) both report through here.

Units of a mean NLL `loss` in nats per token:
  byte, char level: bpc = loss / ln 2 (bits per character), 4 decimals;
  word level: ppl = exp(loss) (perplexity), 2 decimals;
  any other level (a model directory that records none): bits_per_token = loss / ln 2.

The unigram baseline of a split is the entropy of its own token frequencies: the loss of the
best model that ignores context on that split. A language model whose loss is not below it
has learned nothing a word count does not know.

A word-level corpus can also be too small for word level itself (`starved_word_level`): too
few training tokens per word type for a model to learn the words, or so many valid words
outside the vocabulary that predicting `<unk>` is much of what the loss measures. A model on
such a corpus that is not clearly below its baseline (`NARROW_MARGIN`) gets a verdict that
says why and names the character level, which the same text supports (`corpus_verdict`).

Example:
  >>> format_loss(4.6, "word")
  'loss 4.6000 | ppl 99.48'
  >>> verdict(7.4, 6.7, "word", "valid") is not None
  True
"""
import dataclasses
import math
import os
from typing import Optional

from untrusted_files import reading, schema
from txl_tf.storage.model_dir_layout import CORPUS_INFO_FILE

LN2 = math.log(2.0)
CHAR_LEVELS = ("byte", "char", "character")
WORD_LEVELS = ("word",)
_DECIMALS = {"bpc": 4, "ppl": 2, "bits_per_token": 4}
_SYMBOLS = {"byte": "bytes", "char": "characters", "character": "characters", "word": "words"}
# A word-level corpus is starved below this many training tokens per vocabulary entry (the
# data side warns at the same figure when it prepares one) ...
MIN_TOKENS_PER_TYPE = 20
# ... or when more than this fraction of the valid tokens are outside the vocabulary.
MAX_UNK_FRACTION = 0.05
# On a starved corpus, a word model less than this many nats below its unigram baseline (a
# perplexity less than e^0.5 = 1.65 times lower than counting words) gets the verdict.
NARROW_MARGIN = 0.5


def unit_name(level: Optional[str]) -> str:
    """'bpc' for byte and char levels, 'ppl' for word level, else 'bits_per_token'."""
    if level in CHAR_LEVELS:
        return "bpc"
    if level in WORD_LEVELS:
        return "ppl"
    return "bits_per_token"


def unit_value(loss: float, level: Optional[str]) -> float:
    """`loss` (nats per token) in the unit of `level`: bits, or exp(loss) for perplexity."""
    if unit_name(level) == "ppl":
        return math.exp(min(loss, 700.0))
    return loss / LN2


def format_value(loss: float, level: Optional[str]) -> str:
    """'ppl 99.48', 'bpc 1.2345' or 'bits_per_token 1.2345'."""
    unit = unit_name(level)
    return f"{unit} {unit_value(loss, level):.{_DECIMALS[unit]}f}"


def format_loss(loss: float, level: Optional[str]) -> str:
    """'loss 4.6000 | ppl 99.48': the loss in nats and in the unit of `level`."""
    return f"loss {loss:.4f} | {format_value(loss, level)}"


def loss_fields(loss: Optional[float], level: Optional[str], prefix: str = "") -> dict:
    """JSON fields of a loss: {prefix + 'loss': nats, prefix + unit: value} (None stays None)."""
    value = None if loss is None else unit_value(loss, level)
    return {f"{prefix}loss": loss, f"{prefix}{unit_name(level)}": value}


def _advice(level: Optional[str]) -> str:
    if level in WORD_LEVELS:
        return ("train longer (--train_steps), use a smaller vocabulary (prepare_data.py "
                "--min_freq or --max_size), more text, or --level=char")
    return "train longer (--train_steps) or on more text"


def verdict(loss: Optional[float], baseline: Optional[float], level: Optional[str],
            what: str, facts: Optional["CorpusFacts"] = None) -> Optional[str]:
    """The line that says a model does no better than its split's unigram entropy, or None
    when it does (or nothing is known).

    Args:
      loss: mean NLL (nats per token) of the model on a split.
      baseline: the unigram entropy (nats per token) of the same split.
      level: the data's level (byte, char, word), for the unit and the advice.
      what: the split's name in the line, e.g. 'valid'.
      facts: the corpus' `CorpusFacts`; a word-level corpus too small for word level
        (`starved_word_level`) adds a sentence saying why.

    Returns:
      'verdict: the model does not beat counting words: ...' when `loss >= baseline`,
      else None.
    """
    if loss is None or baseline is None or loss < baseline:
        return None
    symbols = _SYMBOLS.get(level, "tokens")
    return (f"verdict: the model does not beat counting {symbols}: its {what} loss {loss:.4f} "
            f"({format_value(loss, level)}) is not below the unigram entropy of the {what} "
            f"{symbols}, {baseline:.4f} ({format_value(baseline, level)}); {_advice(level)}."
            + _thin(facts))


def _thin(facts) -> str:
    why = starved_word_level(facts)
    return f" This corpus is also too small for word level: {why}." if why else ""


@dataclasses.dataclass
class CorpusFacts:
    """What a corpus description (corpus-info.json) says of the corpus' size.

    Attributes:
      level: byte, char or word.
      vocab_size: V.
      train_tokens: tokens of the training split.
      valid_tokens: tokens of the split evaluated (0: unknown).
      valid_unk: of them, the ones read as the unknown symbol (None: unknown).
      unk_symbol: that symbol (e.g. '<unk>').
    """
    level: Optional[str]
    vocab_size: int
    train_tokens: int
    valid_tokens: int = 0
    valid_unk: Optional[int] = None
    unk_symbol: Optional[str] = None

    @classmethod
    def from_info(cls, info: Optional[dict], split: str = "valid") -> Optional["CorpusFacts"]:
        """The facts of a corpus-info.json dict (`split`: the evaluated split), or None when it
        records no sizes."""
        if not isinstance(info, dict):
            return None
        counts, unk = info.get("num_tokens") or {}, info.get("unk_tokens") or {}
        if not info.get("vocab_size") or not counts.get("train"):
            return None
        return cls(info.get("level"), int(info["vocab_size"]), int(counts["train"]),
                   int(counts.get(split) or 0), unk.get(split), info.get("unk_symbol"))

    @classmethod
    def from_model_dir(cls, model_dir: str, split: str = "valid") -> Optional["CorpusFacts"]:
        """The facts of the corpus-info.json a model directory holds (a copy of its data's),
        or None."""
        info = reading.read_json_or_none(os.path.join(model_dir, CORPUS_INFO_FILE),
                                         schema=schema.INFO_FIELDS_SCHEMA)
        return None if info is None else cls.from_info(info, split)

    @property
    def tokens_per_type(self) -> float:
        return self.train_tokens / max(self.vocab_size, 1)

    @property
    def unk_fraction(self) -> Optional[float]:
        if self.valid_unk is None or not self.valid_tokens:
            return None
        return self.valid_unk / self.valid_tokens


def starved_word_level(facts: Optional[CorpusFacts]) -> Optional[str]:
    """Why a word-level corpus is too small for word level ('7.3 training tokens per word
    type (a word model needs 20 or more)', joined with 'and' to '20.6% of the valid words are
    <unk>' when both hold), or None when it is not word level or not starved."""
    if facts is None or facts.level not in WORD_LEVELS:
        return None
    reasons = []
    if facts.tokens_per_type < MIN_TOKENS_PER_TYPE:
        reasons.append(f"{facts.tokens_per_type:.1f} training tokens per word type (a word "
                       f"model needs {MIN_TOKENS_PER_TYPE} or more)")
    unk = facts.unk_fraction
    if unk is not None and unk > MAX_UNK_FRACTION:
        reasons.append(f"{100 * unk:.1f}% of the valid words are {facts.unk_symbol or 'unknown'}"
                       f" (more than {100 * MAX_UNK_FRACTION:.0f}%)")
    return " and ".join(reasons) or None


_BETTER_LEVEL = ("prepare the same text at character level (prepare_data.py --dataset=text "
                 "--level=char --raw_path=... --data_dir=NEW_DIR) and train on that")


def corpus_verdict(loss: Optional[float], baseline: Optional[float],
                   facts: Optional[CorpusFacts], what: str = "valid") -> Optional[str]:
    """The verdict of a word-level model on a corpus too small for word level
    (`starved_word_level`) whose loss is below its unigram baseline by less than
    `NARROW_MARGIN` nats (the margin is said), else None (a loss not below the baseline gets
    `verdict`'s line).

    Args:
      loss: mean NLL (nats per token) of the model on the split `what`.
      baseline: the unigram entropy of that split.
      facts: the corpus' `CorpusFacts`.
      what: the split's name in the line.
    """
    why = starved_word_level(facts)
    if (why is None or loss is None or baseline is None or loss >= baseline
            or loss <= baseline - NARROW_MARGIN):
        return None
    return (f"verdict: this corpus is too small for word level: {why}; its {what} loss "
            f"{loss:.4f} is only {baseline - loss:.4f} nats below the unigram entropy of the "
            f"{what} words ({baseline:.4f}); {_BETTER_LEVEL}, where a model learns the text "
            "itself.")
