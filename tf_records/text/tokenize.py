"""Tokenization rules shared by corpora, evaluation and generation.

`TextRules` (`tf_records/vocab/text_rules.py`, stored with the vocabulary in
`corpus-info.json` so that arbitrary text can later be tokenized the same way) say how
raw text becomes symbols:

* `byte` level: the UTF-8 bytes of the text, minus `drop_bytes` (enwik8's reference
  preprocessing drops newline bytes: `drop_bytes=[10]`).
* `char` level: the characters (optionally lower-cased).
* `word` level, the reference rule (`tf/vocabulary.py`): each line is stripped, optionally
  lower-cased and split on whitespace (Python's `str.split()` definition); `eos` is appended to
  every line, blank lines included; with `double_eos` (lm1b) each line becomes `<S> ... <S>`.

Word-level encoding has two backends that give identical ids (a test proves it): `"python"`
(the plain reference definition) and `"tf_text"` (`tensorflow_text.regex_split` on exactly
Python's whitespace characters plus a `tf.lookup` hash table, in batches of lines).
"""
import sys

import numpy as np

from tf_records.errors import DataError, VocabularyError
from tf_records.vocab.text_rules import TextRules
from tf_records.vocab.vocabulary import Vocabulary

# Every character Python's str.split() treats as whitespace, as an RE2 character class.
PY_WHITESPACE = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
_WS_REGEX = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PY_WHITESPACE) + "]+"

BACKENDS = ("python", "tf_text")


def split_lines(text: str):
    """Lines as Python's text-mode file iteration yields them (without the line ends)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def word_symbols(line: str, rules: TextRules):
    """The reference word tokenization of one line -> list of str symbols."""
    line = line.strip()
    if rules.lower_case:
        line = line.lower()
    symbols = line.split()
    if rules.double_eos:
        return [rules.double_eos] + symbols + [rules.double_eos]
    if rules.eos:
        return symbols + [rules.eos]
    return symbols


class _TfTextWordEncoder:
    """Word-level encoder on tensorflow-text; ids identical to the Python reference rule."""

    def __init__(self, vocab: Vocabulary):
        import tensorflow as tf
        import tensorflow_text as tf_text

        self._tf, self._tf_text = tf, tf_text
        self.vocab = vocab
        keys = tf.constant([s.encode("utf-8") for s in vocab.symbols])
        vals = tf.range(len(vocab), dtype=tf.int32)
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(keys, vals), default_value=-1)

    def __call__(self, lines, rules: TextRules) -> np.ndarray:
        tf = self._tf
        lines = [ln.strip() for ln in lines]
        if rules.lower_case:
            lines = [ln.lower() for ln in lines]
        tokens = self._tf_text.regex_split(tf.constant(lines, tf.string), _WS_REGEX)
        ids = self.table.lookup(tokens.flat_values).numpy()
        lengths = tokens.row_lengths().numpy()
        bad = np.flatnonzero(ids < 0)
        if bad.size:
            sym = tokens.flat_values[int(bad[0])].numpy().decode("utf-8")
            ids[bad] = self.vocab._unknown(sym)
        return _insert_eos(ids, lengths, self.vocab, rules)


def _insert_eos(ids, lengths, vocab, rules):
    """Flat ids of rows with `lengths` -> ids with eos (or <S> ... <S>) around every row."""
    if rules.double_eos:
        pre, post, mark = 1, 1, vocab.id_of(rules.double_eos)
    elif rules.eos:
        pre, post, mark = 0, 1, vocab.id_of(rules.eos)
    else:
        return ids.astype(np.int32)
    n = len(lengths)
    out_len = lengths + pre + post
    out_start = np.concatenate([[0], np.cumsum(out_len)[:-1]]).astype(np.int64)
    out = np.full(int(out_len.sum()), mark, np.int32)
    in_start = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    rows = np.repeat(np.arange(n), lengths)
    pos = np.arange(len(ids)) - in_start[rows]
    out[out_start[rows] + pre + pos] = ids
    return out


def encode_word_lines(lines, vocab: Vocabulary, rules: TextRules, backend="python",
                      batch_lines=16384) -> np.ndarray:
    """Encodes an iterable of lines with the word rule -> int32 ids [n] (one stream).

    `backend`: `"python"` or `"tf_text"`; both give identical ids.
    """
    if backend not in BACKENDS:
        raise DataError(f"backend must be one of {BACKENDS}, got {backend!r}.")
    encoder = _TfTextWordEncoder(vocab) if backend == "tf_text" else None
    pieces, batch = [], []

    def flush():
        if not batch:
            return
        if encoder is not None:
            pieces.append(encoder(batch, rules))
        else:
            flat = [s for ln in batch for s in word_symbols(ln, rules)]
            pieces.append(vocab.encode_words(flat))
        batch.clear()

    for line in lines:
        batch.append(line)
        if len(batch) >= batch_lines:
            flush()
    flush()
    return np.concatenate(pieces).astype(np.int32) if pieces else np.zeros([0], np.int32)


def encode_text(text, rules: TextRules, vocab: Vocabulary, backend="python") -> np.ndarray:
    """Token ids of raw text under a corpus's text rules.

    Args:
      text: str, or bytes (byte level; UTF-8 for the other levels).
      rules: the corpus's `TextRules`.
      vocab: its `Vocabulary` (same level as `rules`).
      backend: word level: `python` or `tf_text` (identical ids).

    Returns:
      int32 `[n]` ids.

    Raises:
      VocabularyError: `rules` and `vocab` differ in level, or a symbol is unknown under the
        `error` policy.
      DataError: bytes that are not UTF-8 for a char- or word-level corpus.
    """
    if rules.level != vocab.level:
        raise VocabularyError(f"rules are {rules.level}-level but the vocabulary is {vocab.level}-level.")
    if rules.level == "byte":
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        arr = np.frombuffer(data, np.uint8)
        if rules.drop_bytes:
            arr = arr[~np.isin(arr, np.asarray(rules.drop_bytes, np.uint8))]
        return vocab.encode_bytes(arr)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"text is not valid UTF-8 at byte {e.start}; {rules.level}-level "
                            "corpora need UTF-8 text.") from None
    if rules.level == "char":
        return vocab.encode_chars(text.lower() if rules.lower_case else text)
    return encode_word_lines(split_lines(text), vocab, rules, backend=backend)


def decode_ids(ids, rules: TextRules, vocab: Vocabulary, as_bytes=False):
    """The text of token ids.

    Args:
      ids: int `[n]` ids.
      rules: the corpus's `TextRules`.
      vocab: its `Vocabulary`.
      as_bytes: return bytes instead of str.

    Returns:
      Byte level: the bytes decoded as UTF-8 (invalid bytes replaced), or the raw bytes with
      `as_bytes`; char level: the string; word level: symbols joined by spaces with every `eos`
      turned into a line end (`<S>` markers dropped).
    """
    decoded = vocab.decode(ids)
    if rules.level == "byte":
        return decoded if as_bytes else decoded.decode("utf-8", errors="replace")
    if rules.level == "char":
        return decoded.encode("utf-8") if as_bytes else decoded
    lines, current = [], []
    for sym in decoded:
        if sym == rules.eos:
            lines.append(" ".join(current) + "\n")
            current = []
        elif sym == rules.double_eos:
            if current:
                lines.append(" ".join(current) + "\n")
                current = []
        else:
            current.append(sym)
    text = "".join(lines) + " ".join(current)
    return text.encode("utf-8") if as_bytes else text
