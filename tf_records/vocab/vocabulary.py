"""Vocabularies as plain text files: one symbol per line, in id order (line `i` is id `i`).

File format by level (UTF-8, `\\n` line ends, no header, never a pickle):

* `byte`: the decimal byte value (`0` ... `255`), as the reference's enwik8 preprocessing
  wrote bytes. Example: `101` is `e`.
* `char`: the character itself, except whitespace, non-printable characters and the backslash,
  which are written as `\\uXXXX` (or `\\UXXXXXXXX`) escapes; e.g. a space is `\\u0020`.
* `word`: the word itself (words never contain whitespace), e.g. `<eos>`, `the`.

Building orders symbols as: special symbols first (in the given order), then by descending count,
ties broken by ascending symbol (byte value, code point, or string order). So the ids are a pure
function of the counts, unlike the reference's `Counter.most_common` (whose tie order changed
between Python 2 and 3). `min_freq` keeps symbols with `count >= min_freq`; `max_size` caps
the total size including specials.

Unknown-symbol policy: `"error"` raises `VocabularyError` naming the
first unknown symbol; `"unk"` maps unknown symbols to `unk_symbol` (which must be in the
vocabulary).
"""
import collections
import os

import numpy as np

from tf_records import atomic
from tf_records.errors import VocabularyError
from tf_records.vocab_checksum import content_checksum, read_vocab_bytes
from untrusted_files import reading

LEVELS = ("byte", "char", "word")
UNK_POLICIES = ("error", "unk")


def _char_to_line(ch: str) -> str:
    if ch.isprintable() and not ch.isspace() and ch != "\\":
        return ch
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _line_to_char(line: str, lineno: int, path) -> str:
    if line.startswith("\\"):
        try:
            code = int(line[2:], 16)
            if line[1] not in "uU" or not 0 <= code <= 0x10FFFF:
                raise ValueError
        except (ValueError, IndexError):
            raise VocabularyError(f"{path}:{lineno}: bad character escape {line!r} "
                                  "(expected \\uXXXX or \\UXXXXXXXX).") from None
        return chr(code)
    if len(line) != 1:
        raise VocabularyError(f"{path}:{lineno}: a char-level vocabulary line must hold one "
                              f"character or an escape, got {line!r}.")
    return line


class Vocabulary:
    """An ordered symbol table for one level (`byte`, `char` or `word`).

    Symbols are ints 0..255 for `byte` and strings for `char` and `word`.

    Args:
      symbols: symbols in id order.
      level: `"byte"`, `"char"` or `"word"`.
      specials: the special symbols (must be in `symbols`); informational, kept in corpus-info.
      unk_symbol: the symbol unknown symbols map to under `unk_policy="unk"`.
      unk_policy: `"error"` or `"unk"`.
    """

    def __init__(self, symbols, level, specials=(), unk_symbol=None, unk_policy="error"):
        if level not in LEVELS:
            raise VocabularyError(f"level must be one of {LEVELS}, got {level!r}.")
        if unk_policy not in UNK_POLICIES:
            raise VocabularyError(f"unk_policy must be one of {UNK_POLICIES}, got {unk_policy!r}.")
        self.level = level
        self.symbols = list(symbols)
        if not self.symbols:
            raise VocabularyError("a vocabulary needs at least one symbol.")
        self.index = {}
        for i, sym in enumerate(self.symbols):
            self._check_symbol(sym)
            if sym in self.index:
                raise VocabularyError(f"symbol {sym!r} appears twice (ids {self.index[sym]} and {i}).")
            self.index[sym] = i
        self.specials = list(specials)
        for sym in self.specials:
            if sym not in self.index:
                raise VocabularyError(f"special symbol {sym!r} is not in the vocabulary.")
        self.unk_symbol = unk_symbol
        self.unk_policy = unk_policy
        if unk_policy == "unk" and unk_symbol not in self.index:
            raise VocabularyError(
                f"unk_policy='unk' needs unk_symbol in the vocabulary; {unk_symbol!r} is not.")
        self._byte_lut = None
        self._char_keys = None

    # -- construction -------------------------------------------------------------------------
    def _check_symbol(self, sym):
        if self.level == "byte":
            if isinstance(sym, bool) or not isinstance(sym, (int, np.integer)) or not 0 <= sym <= 255:
                raise VocabularyError(f"byte symbols must be ints 0..255, got {sym!r}.")
        elif self.level == "char":
            if not isinstance(sym, str) or len(sym) != 1:
                raise VocabularyError(f"char symbols must be single characters, got {sym!r}.")
        else:
            if not isinstance(sym, str) or not sym or any(c.isspace() for c in sym):
                raise VocabularyError(f"word symbols must be non-empty and contain no whitespace, "
                                      f"got {sym!r}.")

    @classmethod
    def build(cls, counts, level, specials=(), min_freq=0, max_size=None, unk_symbol=None,
              unk_policy="error"):
        """Builds a vocabulary from symbol counts (a mapping symbol -> count).

        Order: `specials` (plus `unk_symbol` if not among them) first, then descending count,
        ties by ascending symbol; `count >= min_freq`; at most `max_size` symbols in total.
        """
        specials = list(specials)
        if unk_symbol is not None and unk_symbol not in specials:
            specials.append(unk_symbol)
        taken = set(specials)
        rest = sorted(((s, c) for s, c in counts.items() if s not in taken and c >= min_freq),
                      key=lambda sc: (-sc[1], sc[0]))
        symbols = specials + [s for s, _ in rest]
        if max_size is not None:
            if max_size < len(specials):
                raise VocabularyError(f"max_size={max_size} is smaller than the {len(specials)} "
                                      "special symbols.")
            symbols = symbols[:max_size]
        return cls(symbols, level, specials=specials, unk_symbol=unk_symbol, unk_policy=unk_policy)

    @classmethod
    def all_bytes(cls):
        """The full byte vocabulary: 256 symbols, id == byte value."""
        return cls(list(range(256)), "byte")

    # -- file format --------------------------------------------------------------------------
    def to_text(self) -> str:
        """The vocabulary file content (see the module docstring)."""
        if self.level == "byte":
            lines = [str(int(s)) for s in self.symbols]
        elif self.level == "char":
            lines = [_char_to_line(s) for s in self.symbols]
        else:
            lines = list(self.symbols)
        return "\n".join(lines) + "\n"

    def save(self, path):
        """Writes the vocabulary file atomically."""
        atomic.write_text(path, self.to_text())

    @classmethod
    def load(cls, path, level, specials=(), unk_symbol=None, unk_policy="error"):
        """Reads a vocabulary file written by `save` (or any file in the same format).

        Args:
          path: the file.
          level, specials, unk_symbol, unk_policy: as in `Vocabulary`.

        Returns:
          The `Vocabulary`.

        Raises:
          VocabularyError: the file is missing, not UTF-8, empty or malformed.
        """
        if not os.path.lexists(path):
            raise VocabularyError(f"vocabulary file {path} does not exist.")
        try:
            text = reading.decode_utf8(read_vocab_bytes(path), f"vocabulary file {path}",
                                       VocabularyError)
        except FileNotFoundError:
            raise VocabularyError(f"vocabulary file {path} is a link to nothing; give the "
                                  "file itself.") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            raise VocabularyError(f"vocabulary file {path} is empty.")
        symbols = []
        for i, line in enumerate(lines, 1):
            if level == "byte":
                if not line.isdigit() or not 0 <= int(line) <= 255:
                    raise VocabularyError(f"{path}:{i}: a byte vocabulary line must be a decimal "
                                          f"value 0..255, got {line!r}.")
                symbols.append(int(line))
            elif level == "char":
                symbols.append(_line_to_char(line, i, path))
            else:
                symbols.append(line)
        try:
            return cls(symbols, level, specials=specials, unk_symbol=unk_symbol,
                       unk_policy=unk_policy)
        except VocabularyError as e:
            raise VocabularyError(f"{path}: {e}") from None

    def checksum(self) -> str:
        """sha256 (hex, first 16 digits) of the level and the file content."""
        return content_checksum(self.level, self.to_text().encode("utf-8"))

    # -- lookup -------------------------------------------------------------------------------
    def __len__(self):
        return len(self.symbols)

    def __contains__(self, sym):
        return sym in self.index

    def __eq__(self, other):
        return (isinstance(other, Vocabulary) and self.level == other.level
                and self.symbols == other.symbols)

    def __repr__(self):
        return f"Vocabulary(level={self.level!r}, size={len(self)}, checksum={self.checksum()})"

    @property
    def unk_id(self):
        """The id of `unk_symbol` or None."""
        return self.index.get(self.unk_symbol) if self.unk_symbol is not None else None

    def id_of(self, sym) -> int:
        return self.index[sym]

    def _unknown(self, sym, where=""):
        if self.unk_policy == "unk":
            return self.unk_id
        raise VocabularyError(
            f"unknown {self.level} symbol {sym!r}{where} (unk_policy='error'); build the vocabulary "
            "from this text, or use unk_policy='unk' with an unk symbol.")

    def byte_lut(self) -> np.ndarray:
        """int32 [256]: byte value -> id, -1 for bytes not in the vocabulary (byte level)."""
        if self._byte_lut is None:
            lut = np.full(256, -1, np.int32)
            lut[np.asarray(self.symbols, np.int64)] = np.arange(len(self), dtype=np.int32)
            self._byte_lut = lut
        return self._byte_lut

    def encode_bytes(self, data) -> np.ndarray:
        """Byte level: bytes / uint8 array [n] -> int32 ids [n] (vectorized)."""
        arr = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else np.asarray(data, np.uint8)
        ids = self.byte_lut()[arr]
        return self._fix_unknown(ids, lambda i: int(arr[i]))

    def encode_chars(self, text: str) -> np.ndarray:
        """Char level: str [n chars] -> int32 ids [n] (vectorized over code points)."""
        if self._char_keys is None:
            codes = np.array([ord(s) for s in self.symbols], np.int64)
            order = np.argsort(codes)
            self._char_keys = (codes[order], order.astype(np.int32))
        keys, ids_sorted = self._char_keys
        cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), "<u4").astype(np.int64)
        pos = np.minimum(np.searchsorted(keys, cps), len(keys) - 1)
        ids = np.where(keys[pos] == cps, ids_sorted[pos], -1).astype(np.int32)
        return self._fix_unknown(ids, lambda i: chr(int(cps[i])))

    def encode_words(self, words) -> np.ndarray:
        """Word level: sequence of str -> int32 ids."""
        get = self.index.get
        ids = np.fromiter((get(w, -1) for w in words), np.int32)
        words = words if isinstance(words, (list, tuple)) else None
        return self._fix_unknown(ids, (lambda i: words[i]) if words is not None else (lambda i: "?"))

    def _fix_unknown(self, ids, symbol_at):
        bad = np.flatnonzero(ids < 0)
        if bad.size:
            i = int(bad[0])
            unk = self._unknown(symbol_at(i), f" at position {i}")
            ids[bad] = unk
        return ids

    def encode(self, tokens) -> np.ndarray:
        """Symbols -> int32 ids [n]. `tokens`: bytes (byte), str (char) or list of str (word)."""
        if self.level == "byte":
            return self.encode_bytes(tokens)
        if self.level == "char":
            return self.encode_chars(tokens if isinstance(tokens, str) else "".join(tokens))
        return self.encode_words(list(tokens))

    def decode(self, ids):
        """ids [n] -> bytes (byte level), str (char level) or list of str (word level)."""
        ids = np.asarray(ids, np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self)):
            raise VocabularyError(f"ids must be in [0, {len(self)}), got range "
                                  f"[{ids.min()}, {ids.max()}].")
        if self.level == "byte":
            return np.asarray(self.symbols, np.uint8)[ids].tobytes()
        if self.level == "char":
            return "".join(self.symbols[i] for i in ids)
        return [self.symbols[i] for i in ids]


def count_symbols(iterable_of_sequences) -> collections.Counter:
    """Counts symbols over an iterable of symbol sequences."""
    counter = collections.Counter()
    for seq in iterable_of_sequences:
        counter.update(seq)
    return counter
