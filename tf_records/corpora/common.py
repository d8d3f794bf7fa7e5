"""Building vocabularies and streams for byte-, char- and word-level corpora."""
import collections

import numpy as np

from tf_records.corpora.base import BuiltCorpus, counts_of_ids, log
from tf_records.errors import CorpusError, VocabularyError
from tf_records.text.tokenize import TextRules, encode_word_lines, word_symbols
from tf_records.vocab.choice import TOKENS_PER_ENTRY, VocabCounting, auto_min_freq
from tf_records.vocab.vocabulary import Vocabulary


def byte_corpus(raw: dict, drop_bytes=(), full_bytes=True, vocab=None, info=None) -> BuiltCorpus:
    """Byte level. `raw`: split -> uint8 array. `drop_bytes` are removed from every split.

    Vocabulary: `vocab` if given; else with `full_bytes` all 256 bytes (id == byte value);
    else the bytes that occur in any split (minus `drop_bytes`), by descending count.
    """
    drop = np.asarray(drop_bytes, np.uint8)
    kept = {s: (a[~np.isin(a, drop)] if drop.size else a) for s, a in raw.items()}
    for s, a in kept.items():
        if a.size == 0:
            raise CorpusError(f"the {s} split is empty.")
    if vocab is None:
        if full_bytes:
            vocab = Vocabulary.all_bytes()
        else:
            counts = counts_of_ids(kept, 256)
            vocab = Vocabulary.build({b: int(c) for b, c in enumerate(counts) if c > 0}, "byte")
    streams = {s: vocab.encode_bytes(a) for s, a in kept.items()}
    return BuiltCorpus(vocab, TextRules("byte", drop_bytes=tuple(int(b) for b in drop)), streams,
                       dict(info or {}))


def char_corpus(texts: dict, lower_case=False, counting: VocabCounting = VocabCounting(),
                vocab=None, info=None) -> BuiltCorpus:
    """Char level. `texts`: split -> str. The vocabulary is `vocab`, else built as `counting`
    says (`count_splits`, min_freq, max_size, unk_symbol, unk_policy; no specials)."""
    if lower_case:
        texts = {s: t.lower() for s, t in texts.items()}
    for s, t in texts.items():
        if not t:
            raise CorpusError(f"the {s} split is empty.")
    if vocab is None:
        c = counting
        counter = collections.Counter()
        for s in c.count_splits or texts:
            counter.update(texts[s])
        if c.unk_symbol is not None and len(c.unk_symbol) != 1:
            raise CorpusError(f"a char-level unk symbol must be one character, got {c.unk_symbol!r}.")
        vocab = Vocabulary.build(counter, "char", min_freq=c.min_freq or 0, max_size=c.max_size,
                                 unk_symbol=c.unk_symbol, unk_policy=c.unk_policy)
    streams = {s: vocab.encode_chars(t) for s, t in texts.items()}
    return BuiltCorpus(vocab, TextRules("char", lower_case=lower_case), streams,
                       with_unk_counts(info, streams, vocab))


def word_corpus(line_sources: dict, rules: TextRules, counting: VocabCounting, vocab=None,
                backend="python", info=None, progress=None) -> BuiltCorpus:
    """Word level. `line_sources`: split -> zero-argument callable yielding the split's lines.

    The vocabulary (unless `vocab` is given) counts the splits `counting.count_splits` (None:
    all) with the reference rule (specials first, then by count); `backend` picks the encoder
    (ids are identical either way). `progress` prints stage messages on stderr.
    `counting.min_freq=None` and no `max_size` (with an unk symbol): the minimum count is
    chosen from the corpus (`tf_records.vocab.choice.auto_min_freq`), recorded in the corpus
    info as `min_freq_chosen` and reported.
    """
    info = dict(info or {})
    c = counting
    count_splits = list(line_sources) if c.count_splits is None else c.count_splits
    if vocab is None:
        counter = collections.Counter()
        for s in count_splits:
            log(progress, f"counting words of {s} ...")
            for line in line_sources[s]():
                counter.update(word_symbols(line, rules))
        num_tokens = sum(counter.values())
        for sym in c.specials:
            counter.pop(sym, None)
        min_freq = c.min_freq
        if min_freq is None:
            min_freq = _chosen_min_freq(counter, num_tokens, c.specials, c.max_size,
                                        c.unk_symbol, info, progress)
        vocab = Vocabulary.build(counter, "word", specials=c.specials, min_freq=min_freq,
                                 max_size=c.max_size, unk_symbol=c.unk_symbol,
                                 unk_policy=c.unk_policy)
    streams = {}
    for s, lines in line_sources.items():
        log(progress, f"encoding {s} ({backend}) ...")
        try:
            ids = encode_word_lines(lines(), vocab, rules, backend=backend)
        except VocabularyError as e:
            raise VocabularyError(f"{s} split: {e} The vocabulary was counted on {list(count_splits)}; "
                                  "use --unk_policy=unk (unknown words become <unk>) or "
                                  "--vocab_from=all.") from None
        if ids.size == 0:
            raise CorpusError(f"the {s} split is empty.")
        streams[s] = ids
    return BuiltCorpus(vocab, rules, streams, with_unk_counts(info, streams, vocab, progress))


def _chosen_min_freq(counter, num_tokens, specials, max_size, unk_symbol, info, progress) -> int:
    """The automatic minimum count of `word_corpus` (0 when `max_size` is given or there is
    no unk symbol to map the dropped words to), recorded in `info` and reported."""
    if max_size is not None or unk_symbol is None:
        return 0
    n_specials = len(set(specials) | {unk_symbol})
    min_freq = auto_min_freq(counter, num_tokens, n_specials)
    kept = sum(1 for c in counter.values() if c >= min_freq)
    dropped = sum(c for c in counter.values() if c < min_freq)
    info["min_freq_chosen"] = min_freq
    log(progress, f"vocabulary: {kept + n_specials:,} entries, the words seen at least "
                  f"{min_freq} times (of {len(counter):,} distinct; at least "
                  f"{TOKENS_PER_ENTRY} training tokens per entry), so "
                  f"{100 * dropped / max(num_tokens, 1):.2f}% of the training tokens become "
                  f"{unk_symbol}; --min_freq or --max_size to choose")
    return min_freq


def with_unk_counts(info, streams: dict, vocab: Vocabulary, progress=None) -> dict:
    """`info` plus `unk_tokens` ({split: tokens mapped to the unk symbol}) when the
    vocabulary has one; each split with unknown symbols is reported on stderr (`progress`)."""
    info = dict(info or {})
    unk = vocab.unk_id
    if unk is None or vocab.unk_policy != "unk":
        return info
    counts = {s: int(np.count_nonzero(np.asarray(ids) == unk)) for s, ids in streams.items()}
    info["unk_tokens"] = counts
    for s, n in counts.items():
        if n:
            log(progress, f"{s}: {n:,} of {len(streams[s]):,} tokens "
                          f"({100 * n / max(len(streams[s]), 1):.2f}%) are not in the vocabulary "
                          f"and map to {vocab.unk_symbol}")
    return info
