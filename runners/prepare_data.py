"""Prepare a corpus: download (or take --raw_path), build the vocabulary, token caches and records.

Examples:
  python runners/prepare_data.py --dataset=builtin --data_dir=data/builtin \
      --splits=train,valid,test --tgt_len=128 --per_replica_batch=8
  python runners/prepare_data.py --dataset=enwik8 --data_dir=data/enwik8 --splits=train \
      --tgt_len=512 --per_replica_batch=22
  python runners/prepare_data.py --dataset=text --raw_path=my.txt --level=word --data_dir=data/my

Unknown flags are errors. The last line of stdout is a JSON summary.
"""
import json
import os
import sys

# Runnable as `python runners/prepare_data.py` from the repository root without installing.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

import tf_records  # noqa: E402

FLAGS = flags.FLAGS

flags.DEFINE_enum("dataset", "builtin", sorted(tf_records.CORPORA), "Corpus to prepare.")
flags.DEFINE_string("data_dir", None, "Output directory.", required=True)
flags.DEFINE_string("raw_path", None, "Archive / text file already on disk (no download).")
flags.DEFINE_bool("download", True, "Download the canonical archive if it is not in data_dir/raw.")
flags.DEFINE_list("splits", ["train", "valid", "test"], "Splits to write records for ('' = none).")
# Record layout (applies to every split in --splits).
flags.DEFINE_integer("tgt_len", 128, "Segment length (tokens per record).")
flags.DEFINE_integer("per_replica_batch", 8, "Streams per replica.")
flags.DEFINE_integer("replicas_per_host", 1, "Replicas (cores/devices) per host.")
flags.DEFINE_integer("num_hosts", 1, "Hosts (input pipelines); one file per host.")
flags.DEFINE_integer("num_passes", 1, "Rotated copies of the stream (training on TPU).")
flags.DEFINE_enum("last_segment", "drop", ["drop", "pad"],
                  "drop: drop each stream's last partial segment; pad: keep it, labels -1.")
flags.DEFINE_integer("seed", 0, "Seed of the rotation offsets (num_passes > 1).")
flags.DEFINE_bool("progress", True, "Show progress on stderr.")
# Corpus options (only the ones given on the command line are passed to the corpus).
flags.DEFINE_bool("full_bytes", None, "enwik8/text: 256-byte vocabulary, keep newlines.")
flags.DEFINE_bool("verify_checksum", None, "enwik8/text8: check the canonical size/md5.")
flags.DEFINE_integer("eval_bytes", None, "enwik8: bytes in valid and in test (5,000,000).")
flags.DEFINE_integer("eval_chars", None, "text8: characters in valid and in test (5,000,000).")
flags.DEFINE_string("url", None, "Download URL (default: the reference's URL).")
flags.DEFINE_string("vocab_url", None, "lm1b: URL of 1b_word_vocab.txt.")
flags.DEFINE_string("vocab_path", None, "Use this vocabulary file (lm1b: 1b_word_vocab.txt).")
flags.DEFINE_enum("backend", None, ["python", "tf_text"], "Word tokenizer backend (same ids).")
flags.DEFINE_integer("num_shuffles", None, "lm1b: shuffled copies of each training shard.")
flags.DEFINE_integer("max_train_shards", None, "lm1b: read only the first N training shards.")
flags.DEFINE_enum("level", None, ["byte", "char", "word"], "text: tokenization level.")
flags.DEFINE_string("train_path", None, "text: training file (default --raw_path).")
flags.DEFINE_string("valid_path", None, "text: validation file.")
flags.DEFINE_string("test_path", None, "text: test file.")
flags.DEFINE_float("eval_fraction", None, "text/builtin: fraction for valid and for test.")
flags.DEFINE_bool("lower_case", None, "text: lower-case the text.")
flags.DEFINE_bool("add_eos", None, "text (word): <eos> at every line end.")
flags.DEFINE_enum("vocab_from", None, ["train", "all"], "text: splits counted for the vocabulary.")
flags.DEFINE_integer("min_freq", None, "text: minimum count of a symbol.")
flags.DEFINE_integer("max_size", None, "text: maximum vocabulary size (with specials).")
flags.DEFINE_enum("unk_policy", None, ["error", "unk"], "text: unknown symbols error or map to unk.")
flags.DEFINE_integer("max_bytes", None, "builtin: keep only the first N bytes (0 = all).")
flags.DEFINE_integer("num_symbols", None, "synthetic: alphabet size.")
flags.DEFINE_integer("period", None, "synthetic: chunk length (make it > tgt_len).")
flags.DEFINE_integer("repeats", None, "synthetic: repeats of each chunk.")
flags.DEFINE_integer("train_tokens", None, "synthetic: train tokens.")
flags.DEFINE_integer("eval_tokens", None, "synthetic: valid and test tokens.")

# Flags that are not corpus options; every other non-None flag is passed to the corpus.
_RUN_FLAGS = {"dataset", "data_dir", "raw_path", "download", "splits", "tgt_len",
              "per_replica_batch", "replicas_per_host", "num_hosts", "num_passes", "last_segment",
              "seed", "progress"}
_CORPUS_FLAGS = ["full_bytes", "verify_checksum", "eval_bytes", "eval_chars", "url", "vocab_url",
                 "vocab_path", "backend", "num_shuffles", "max_train_shards", "level", "train_path",
                 "valid_path", "test_path", "eval_fraction", "lower_case", "add_eos", "vocab_from",
                 "min_freq", "max_size", "unk_policy", "max_bytes", "num_symbols", "period",
                 "repeats", "train_tokens", "eval_tokens"]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    options = {k: FLAGS[k].value for k in _CORPUS_FLAGS if FLAGS[k].value is not None}
    corpus_class = tf_records.CORPORA[FLAGS.dataset]
    bad = sorted(set(options) - set(corpus_class.OPTIONS))
    if bad:
        raise app.UsageError(f"--dataset={FLAGS.dataset} does not take {', '.join('--' + b for b in bad)}; "
                             f"its options are {', '.join('--' + o for o in sorted(corpus_class.OPTIONS))}.")
    splits = [s for s in FLAGS.splits if s]
    layout = tf_records.RecordLayout(
        tgt_len=FLAGS.tgt_len, per_replica_batch=FLAGS.per_replica_batch,
        replicas_per_host=FLAGS.replicas_per_host, num_hosts=FLAGS.num_hosts,
        num_passes=FLAGS.num_passes, last_segment=FLAGS.last_segment)
    cli.check_directories(data_dir=FLAGS.data_dir)
    cli.check_files(raw_path=FLAGS.raw_path, train_path=FLAGS.train_path,
                    valid_path=FLAGS.valid_path, test_path=FLAGS.test_path,
                    vocab_path=FLAGS.vocab_path)
    summary = tf_records.prepare(FLAGS.dataset, FLAGS.data_dir,
                                 layouts={s: layout for s in splits}, raw_path=FLAGS.raw_path,
                                 download=FLAGS.download, progress=FLAGS.progress,
                                 seed=FLAGS.seed, **options)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    cli.run(main)
