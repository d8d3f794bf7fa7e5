"""One Billion Word benchmark (Chelba et al.), word level.

Reference handling: the vocabulary is the published `1b_word_vocab.txt` (first column of each
line, in file order; `<S>` and `<UNK>` come from it, unknown words map to `<UNK>`); every
sentence is wrapped as `<S> ... <S>`; valid and test are both the heldout shard
`news.en.heldout-00000-of-00050` (as in the reference, valid == test); cutoffs [60000, 100000,
640000]. Training: each training shard's sentence order is shuffled (seeded; `num_shuffles`
shuffled copies per shard, the reference wrote 4 files per shard) and the shards are concatenated
in name order into one stream. Difference from the reference: the reference restarted its
streams at every file boundary; here the shuffled shards form one continuous stream (sentences
are delimited by `<S>` anyway). `max_train_shards` limits the shards read (quick runs, tests).
Integrity: the tar.gz must read completely (no archive checksum is pinned).
"""
import io
import os
import tarfile
import zlib

import numpy as np

from tf_records.corpora.base import BuiltCorpus, Corpus, check_nonempty, decoded_lines, log
from tf_records.corpora.options import (BACKEND_HELP, BACKENDS, URL_HELP, CorpusOptions,
                                        Option)
from tf_records import download as download_lib
from tf_records.data_dir_layout import RAW_DIR
from tf_records.errors import CorpusError, VocabularyError
from tf_records.text.tokenize import TextRules, encode_word_lines
from tf_records.vocab.vocabulary import Vocabulary

URL = ("http://www.statmt.org/lm-benchmark/"
       "1-billion-word-language-modeling-benchmark-r13output.tar.gz")
VOCAB_URL = "https://github.com/rafaljozefowicz/lm/raw/master/1b_word_vocab.txt"
TRAIN_DIR = "training-monolingual.tokenized.shuffled/"
HELDOUT = "heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050"


def load_published_vocab(path) -> Vocabulary:
    """`1b_word_vocab.txt`: the first column of every non-empty line, in order."""
    if not os.path.exists(path):
        raise VocabularyError(f"lm1b vocabulary {path} does not exist; pass --vocab_path or allow "
                              f"the download of {VOCAB_URL}.")
    symbols = []
    with open(path, encoding="utf-8") as f:
        for line in decoded_lines(f, path):
            parts = line.split()
            if parts:
                symbols.append(parts[0])
    if not symbols:
        raise VocabularyError(f"lm1b vocabulary {path} is empty.")
    return Vocabulary(symbols, "word", specials=["<S>", "<UNK>"], unk_symbol="<UNK>", unk_policy="unk")


class OneBillionWord(Corpus):
    name = "lm1b"
    level = "word"
    cutoffs = (60000, 100000, 640000)
    archive_name = "1-billion-word-language-modeling-benchmark-r13output.tar.gz"
    # tensorflow_datasets' lm1b checksums.tsv: size and sha256 of the archive at URL.
    ARCHIVE_CHECKS = {"size": 1_792_209_805, "sha256": "01ba60381110baf7f189dfd2b8374de371e8c9a34"
                                                       "0835793f190bdae9e90a34e"}
    OPTIONS = CorpusOptions(
        backend=Option("tf_text", BACKEND_HELP, choices=BACKENDS),
        url=Option(URL, URL_HELP),
        vocab_url=Option(VOCAB_URL, "URL of 1b_word_vocab.txt."),
        vocab_path=Option(None, "use this 1b_word_vocab.txt instead of downloading one.",
                          kind=str),
        seed=Option(123456, "seed of the shuffles of the training shards.", flag="corpus_seed",
                    range=(0, 2**63 - 1, "NumPy's generator seed")),
        num_shuffles=Option(1, "shuffled copies of each training shard.",
                            range=(1, 1000, "copies of the 100 training shards")),
        max_train_shards=Option(0, "read only the first N training shards (0 = all).",
                                range=(0, 2**31 - 1, "0: all")))

    def build(self, data_dir, raw_path=None, download=True, progress=True):
        path = self.obtain_archive(data_dir, raw_path, download, progress)
        vocab_path = (self.options["vocab_path"]
                      or os.path.join(data_dir, RAW_DIR, "1b_word_vocab.txt"))
        if not os.path.exists(vocab_path) and not self.options["vocab_path"] and download:
            download_lib.fetch(self.options["vocab_url"], vocab_path, progress=progress)
        vocab = load_published_vocab(vocab_path)
        rules = TextRules("word", double_eos="<S>")
        backend = self.options["backend"]
        max_shards = int(self.options["max_train_shards"])
        check_nonempty(path)
        shards, heldout = [], None
        try:
            with tarfile.open(path, "r|*") as tf:
                for member in tf:
                    name = member.name
                    if not member.isfile():
                        continue
                    if TRAIN_DIR in name and (not max_shards or len(shards) < max_shards):
                        shards.append((name, tf.extractfile(member).read()))
                    elif name.endswith(HELDOUT):
                        heldout = tf.extractfile(member).read()
        except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
            raise CorpusError(f"{path} is not a readable tar archive ({e}): truncated or corrupted "
                              "download? Delete it and download it again.") from None
        if not shards or heldout is None:
            raise CorpusError(f"archive {path} lacks {TRAIN_DIR}* training shards or {HELDOUT}; "
                              "is it the right archive?")

        def lines(name, data):
            return list(decoded_lines(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
                                      f"{path}:{name}"))

        pieces = []
        for i, (name, data) in enumerate(sorted(shards)):
            log(progress, f"shard {i + 1}/{len(shards)}: {name}")
            sentences = lines(name, data)
            for k in range(int(self.options["num_shuffles"])):
                rng = np.random.default_rng([int(self.options["seed"]), i, k])
                order = rng.permutation(len(sentences))
                pieces.append(encode_word_lines((sentences[j] for j in order), vocab, rules, backend))
        heldout_ids = encode_word_lines(lines(HELDOUT, heldout), vocab, rules, backend)
        streams = {"train": np.concatenate(pieces), "valid": heldout_ids, "test": heldout_ids}
        return BuiltCorpus(vocab, rules, streams, {"source": URL, "vocab_source": VOCAB_URL,
                                                   "train_shards": [n for n, _ in sorted(shards)]})
