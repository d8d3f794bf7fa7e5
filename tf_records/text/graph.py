"""The text rules of a model's vocabulary as TensorFlow ops, for graphs that take raw text.

`GraphText` tokenizes and detokenizes inside a graph exactly as `tf_records.text.tokenize`
(`encode_text` / `decode_ids`) does in Python, so that a SavedModel can serve text
(`txl_tf.serving.module.ServingModule` receives one from runners/export.py). It needs the
`tensorflow_text` ops to encode; lookup tables read the vocabulary file (an asset of the
SavedModel).

Example:
  >>> codec = GraphText(load_model_vocab(model_dir, n_token))
  >>> ids = codec.encode(tf.constant("the cat\\n"))          # int32 [n]
  >>> codec.decode(ids)                                     # string []
"""
import functools
import os
import sys
import tempfile

import tensorflow as tf


@functools.lru_cache(maxsize=1)
def python_whitespace_class() -> str:
    """Python's str.isspace characters as an RE2 class (the word rule splits on them, as
    str.split does)."""
    chars = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in chars) + "]"


class GraphText(tf.Module):
    """A vocabulary's text rules in the graph: `encode` text to ids, `decode` ids to text.

    Args:
      model_vocab: a `tf_records.vocab.model_vocab.ModelVocab` (its level, rules, vocabulary and
        vocab_path).

    Attributes:
      vocab_path: the vocabulary file (vocab.txt) the model ships.
      level: "byte", "char" or "word".
    """

    def __init__(self, model_vocab):
        super().__init__(name="graph_text")
        rules, vocab = model_vocab.rules, model_vocab.vocab
        self.vocab_path = model_vocab.vocab_path
        self.level = model_vocab.level
        self.lower_case = bool(rules.lower_case)
        self.drop_bytes = [int(b) for b in rules.drop_bytes]
        self.eos = rules.eos
        self.double_eos = rules.double_eos
        self.unk_id = vocab.unk_id
        self._build_tables(self._table_file(vocab), len(vocab))

    def _table_file(self, vocab) -> str:
        """The file the lookup tables read: vocab.txt, or for characters (which vocab.txt
        escapes as \\uXXXX) a derived asset with one decimal code point per line, removed with
        this object (tf.saved_model.save copies it into the export's assets)."""
        if self.level != "char":
            return self.vocab_path
        object.__setattr__(self, "_asset_dir", tempfile.TemporaryDirectory(prefix="txl-export-"))
        path = os.path.join(self._asset_dir.name, "vocab_codepoints.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(f"{ord(s)}\n" for s in vocab.symbols))
        self.codepoint_file = tf.saved_model.Asset(path)
        return path

    def _build_tables(self, path, size):
        whole, number = tf.lookup.TextFileIndex.WHOLE_LINE, tf.lookup.TextFileIndex.LINE_NUMBER
        self.symbol_to_id = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(path, tf.string, whole, tf.int64, number,
                                          vocab_size=size), default_value=-1)
        self.id_to_symbol = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(path, tf.int64, number, tf.string, whole,
                                          vocab_size=size), default_value="")

    def _lookup(self, keys, shown):
        """keys string [n] -> int32 ids [n]; unknown symbols map to unk or fail clearly."""
        ids = self.symbol_to_id.lookup(keys)
        unknown = ids < 0
        if self.unk_id is not None:
            ids = tf.where(unknown, tf.constant(self.unk_id, tf.int64), ids)
        else:
            check = tf.debugging.Assert(
                tf.logical_not(tf.reduce_any(unknown)),
                [f"the text has {self.level} symbols that are not in the model's vocabulary "
                 "(and it has no unk symbol); remove them:", tf.boolean_mask(shown, unknown)],
                summarize=20)
            with tf.control_dependencies([check]):
                ids = tf.identity(ids)
        return tf.cast(ids, tf.int32)

    def encode(self, text, continuing=False):
        """Scalar string -> int32 ids [n] with the corpus rules (tf_records.text.tokenize).

        Args:
          text: string [].
          continuing: for a prompt, drop the end-of-line symbol of a last line that has no
            newline (the continuation goes on with that line).
        """
        if self.level == "byte":
            return self._encode_bytes(text)
        if self.level == "char":
            return self._encode_chars(text)
        keys = self._word_symbols(text)
        if continuing and (self.eos or self.double_eos):
            ends_line = tf.strings.regex_full_match(text, "(?s).*[\r\n]")
            drop = tf.logical_and(tf.logical_not(ends_line), tf.size(keys) > 0)
            keys = keys[:tf.size(keys) - tf.cast(drop, tf.int32)]
        return self._lookup(keys, keys)

    def _encode_bytes(self, text):
        import tensorflow_text as tf_text

        values = tf.cast(tf_text.ByteSplitter().split(text), tf.int32)
        for b in self.drop_bytes:
            values = tf.boolean_mask(values, values != b)
        keys = tf.strings.as_string(values)
        return self._lookup(keys, keys)

    def _encode_chars(self, text):
        import tensorflow_text as tf_text

        if self.lower_case:
            text = tf.strings.lower(text, encoding="utf-8")
        points = tf_text.UnicodeCharTokenizer().tokenize(text)
        return self._lookup(tf.strings.as_string(points),
                            tf.strings.unicode_encode(points[:, None], "UTF-8"))

    def _word_symbols(self, text):
        """The word rule: lines, strip, (lower), split on Python whitespace, end-of-line
        symbols. Returns string [n]."""
        import tensorflow_text as tf_text

        ws = python_whitespace_class()
        text = tf.strings.regex_replace(text, "\r\n?", "\n")
        lines = tf.strings.split(text, "\n")
        lines = tf.cond(tf.equal(lines[-1], ""), lambda: lines[:-1], lambda: lines)
        lines = tf.strings.regex_replace(lines, f"^{ws}+|{ws}+$", "")
        if self.lower_case:
            lines = tf.strings.lower(lines, encoding="utf-8")
        words = tf_text.regex_split(lines, ws + "+")
        rows = tf.shape(lines)[:1]
        if self.double_eos:
            mark = tf.RaggedTensor.from_tensor(tf.fill(tf.concat([rows, [1]], 0),
                                                       self.double_eos))
            words = tf.concat([mark, words, mark], axis=1)
        elif self.eos:
            mark = tf.RaggedTensor.from_tensor(tf.fill(tf.concat([rows, [1]], 0), self.eos))
            words = tf.concat([words, mark], axis=1)
        return words.flat_values

    def decode(self, ids):
        """int32 ids [n] -> scalar string (tf_records.text.tokenize.decode_ids)."""
        symbols = self.id_to_symbol.lookup(tf.cast(ids, tf.int64))
        if self.level == "byte":
            values = tf.strings.to_number(symbols, tf.int32)
            byte_strings = tf.constant([bytes([i]) for i in range(256)])
            raw = tf.strings.reduce_join(tf.gather(byte_strings, values))
            return tf.strings.unicode_transcode(raw, "UTF-8", "UTF-8", errors="replace")
        if self.level == "char":
            points = tf.strings.to_number(symbols, tf.int32)
            return tf.strings.unicode_encode(points, "UTF-8")
        return self._join_words(symbols)

    def _join_words(self, symbols):
        """Words joined by spaces, end-of-line symbols as newlines (one per double_eos pair)."""
        is_eos = tf.equal(symbols, self.eos) if self.eos else tf.zeros_like(symbols, tf.bool)
        is_dbl = (tf.equal(symbols, self.double_eos) if self.double_eos
                  else tf.zeros_like(symbols, tf.bool))
        marker = is_eos | is_dbl
        prev_marker = tf.concat([[True], marker[:-1]], axis=0)
        pieces = tf.where(is_eos, "\n", symbols)
        pieces = tf.where(is_dbl, tf.where(prev_marker, "", "\n"), pieces)
        next_marker = tf.concat([marker[1:], [True]], axis=0)
        seps = tf.where(marker | next_marker, "", " ")
        return tf.strings.reduce_join(tf.strings.join([pieces, seps]))
