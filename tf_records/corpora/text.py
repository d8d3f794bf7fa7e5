"""Any text files, at byte, char or word level.

Options:
  level: `byte` (default), `char` or `word`.
  train_path / valid_path / test_path: the files. `raw_path` (prepare's argument) stands for
    `train_path` when that is not set. Without `valid_path` and `test_path`, the train file
    is split contiguously: the last `eval_fraction` of it (by symbols) is test, the
    `eval_fraction` before it valid.
  lower_case: lower-case the text (char and word level).
  add_eos: append `<eos>` to every line (word level; default True).
  vocab_from: `train` (default) or `all` splits are counted.
  min_freq, max_size: vocabulary limits (char and word level). Neither given, at word level
    with `unk_policy=unk`: the minimum count is chosen from the corpus
    (`tf_records/vocab/choice.py`) and recorded as `min_freq_chosen` in corpus-info.json.
  unk_policy: `unk` (default: adds `<unk>` for word level, `\\ufffd` for char level;
    symbols of valid/test missing from the vocabulary and pruned symbols map to it, counted per
    split in corpus-info.json `unk_tokens`) or `error`.
  full_bytes: byte level: True (default) = the 256-byte vocabulary (id == byte value); False =
    only the bytes that occur, by count.
  vocab_path: use this existing vocabulary file instead of building one.
"""
import dataclasses
import os

import numpy as np

from tf_records.corpora.base import Corpus, check_nonempty, contiguous_split, text_file_lines
from tf_records.corpora.common import byte_corpus, char_corpus, word_corpus
from tf_records.corpora.options import (BACKEND_HELP, BACKENDS, EVAL_FRACTION_HELP,
                                        EVAL_FRACTION_RANGE, FULL_BYTES_HELP, INT32_MAX,
                                        CorpusOptions, Option)
from tf_records.errors import CorpusError, DataError
from tf_records.text.tokenize import TextRules
from tf_records.vocab.choice import VocabCounting
from tf_records.vocab.vocabulary import Vocabulary


class TextFiles(Corpus):
    name = "text"
    level = "byte"
    cutoffs = ()
    OPTIONS = CorpusOptions(
        level=Option("byte", "tokenization level.", choices=("byte", "char", "word")),
        train_path=Option(None, "training file (default --raw_path).", kind=str),
        valid_path=Option(None, "validation file.", kind=str),
        test_path=Option(None, "test file.", kind=str),
        eval_fraction=Option(0.05, EVAL_FRACTION_HELP, range=EVAL_FRACTION_RANGE),
        lower_case=Option(False, "lower-case the text."),
        add_eos=Option(True, "(word level) <eos> at every line end."),
        vocab_from=Option("train", "splits counted for the vocabulary.",
                          choices=("train", "all")),
        min_freq=Option(None, "minimum count of a symbol (word level, when neither this nor "
                              "--max_size is given: chosen from the corpus; 1 keeps every word).",
                        kind=int, range=(1, INT32_MAX, "a count")),
        max_size=Option(None, "maximum vocabulary size (with specials).", kind=int,
                        range=(1, INT32_MAX, "ids are int32")),
        unk_policy=Option("unk", "symbols of valid/test (or pruned ones) missing from the "
                                 "vocabulary map to <unk> (default) or are an error.",
                          choices=("error", "unk")),
        full_bytes=Option(True, FULL_BYTES_HELP),
        vocab_path=Option(None, "use this vocabulary file instead of building one.", kind=str),
        backend=Option("tf_text", BACKEND_HELP, choices=BACKENDS))

    def __init__(self, **options):
        super().__init__(**options)
        self.level = self.options["level"]
        if self.level not in ("byte", "char", "word"):
            raise DataError(f"--level must be byte, char or word, got {self.level!r}.")
        if self.options["vocab_from"] not in ("train", "all"):
            raise DataError("--vocab_from must be train or all.")

    def _paths(self, raw_path):
        train = self.options["train_path"] or (os.fspath(raw_path) if raw_path else None)
        if not train:
            raise CorpusError("the text corpus needs --train_path=FILE (or --raw_path=FILE).")
        paths = {"train": train, "valid": self.options["valid_path"], "test": self.options["test_path"]}
        if (paths["valid"] is None) != (paths["test"] is None):
            raise CorpusError("give both --valid_path and --test_path, or neither (then the train "
                              "file is split).")
        for p in filter(None, paths.values()):
            if not os.path.exists(p):
                raise CorpusError(f"text file {p} does not exist.")
            check_nonempty(p)
        return paths

    def _split(self, whole, what):
        n = int(len(whole) * float(self.options["eval_fraction"]))
        if n < 1:
            raise CorpusError(f"{what} is too short to split off valid/test ({len(whole)} symbols, "
                              f"eval_fraction={self.options['eval_fraction']}); give "
                              "--valid_path/--test_path or a longer file.")
        return contiguous_split(whole, n, n, what)

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        paths = self._paths(raw_path)
        o = self.options
        split_given = paths["valid"] is not None
        count = ["train"] if o["vocab_from"] == "train" else ["train", "valid", "test"]
        unk = None if o["unk_policy"] == "error" else ("<unk>" if self.level == "word" else "\ufffd")
        vocab = (Vocabulary.load(o["vocab_path"], self.level, unk_symbol=unk, unk_policy=o["unk_policy"])
                 if o["vocab_path"] else None)
        info = {"files": {k: os.path.abspath(v) for k, v in paths.items() if v}}
        counting = VocabCounting(count_splits=count, min_freq=o["min_freq"],
                                 max_size=o["max_size"], unk_symbol=unk,
                                 unk_policy=o["unk_policy"])
        if self.level == "byte":
            raw = {}
            for s, p in paths.items():
                if p:
                    raw[s] = np.fromfile(p, np.uint8)
            if not split_given:
                raw = self._split(raw["train"], paths["train"])
            return byte_corpus(raw, full_bytes=o["full_bytes"], vocab=vocab, info=info)
        if self.level == "char":
            texts = {s: "".join(text_file_lines(p)) for s, p in paths.items() if p}
            if not split_given:
                texts = self._split(texts["train"], paths["train"])
            return char_corpus(texts, lower_case=o["lower_case"], counting=counting, vocab=vocab,
                               info=info)
        rules = TextRules("word", lower_case=o["lower_case"], eos="<eos>" if o["add_eos"] else None)
        if split_given:
            sources = {s: (lambda p=p: text_file_lines(p)) for s, p in paths.items()}
        else:
            lines = list(text_file_lines(paths["train"]))
            parts = self._split(lines, paths["train"] + " (lines)")
            sources = {s: (lambda ls=ls: iter(ls)) for s, ls in parts.items()}
        specials = ["<eos>"] if o["add_eos"] else []
        return word_corpus(sources, rules, dataclasses.replace(counting, specials=specials),
                           vocab=vocab, backend=o["backend"], info=info, progress=progress)
