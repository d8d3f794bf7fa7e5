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

from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

import tf_records  # noqa: E402
from runners.cli import data_flags as flags_data  # noqa: E402

FLAGS = flags.FLAGS

flags.DEFINE_enum("dataset", "builtin", sorted(tf_records.CORPORA), "Corpus to prepare.")
flags.DEFINE_string("data_dir", None, "Output directory.", required=True)
flags.DEFINE_string("raw_path", None, "Archive / text file already on disk (no download).")
flags.DEFINE_bool("download", True, "Download the canonical archive if it is not in data_dir/raw.")
flags.DEFINE_list("splits", ["train", "valid", "test"], "Splits to write records for ('' = none).")
# Record layout (applies to every split in --splits). The defaults are the layout of
# runners/train.py's defaults (tgt_len 64, 16 streams, one replica).
flags.DEFINE_integer("tgt_len", 64, "Segment length (tokens per record).")
flags.DEFINE_integer("per_replica_batch", 16, "Streams per replica.")
flags.DEFINE_integer("replicas_per_host", 1, "Replicas (cores/devices) per host.")
flags.DEFINE_integer("num_hosts", 1, "Hosts (input pipelines); one file per host.")
flags.DEFINE_integer("num_passes", 1, "Rotated copies of the stream (training on TPU).")
flags.DEFINE_enum("last_segment", "drop", ["drop", "pad"],
                  "drop: drop each stream's last partial segment; pad: keep it, labels -1.")
flags.DEFINE_integer("seed", 0, "Seed of the rotation offsets (num_passes > 1).")
flags.DEFINE_bool("progress", True, "Show progress on stderr.")
# Corpus options (only the ones given on the command line are passed to the corpus).
flags_data.define_corpus_flags(FLAGS)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    # A prepared data_dir keeps its recorded dataset and options unless others are given.
    dataset, options = tf_records.recorded_corpus(
        FLAGS.data_dir, FLAGS.dataset if FLAGS["dataset"].present else None, FLAGS.raw_path,
        flags_data.corpus_options(FLAGS))
    corpus_class = tf_records.CORPORA[dataset]
    bad = sorted(set(flags_data.corpus_options(FLAGS)) - set(corpus_class.OPTIONS))
    if bad:
        raise app.UsageError(f"--dataset={dataset} does not take {', '.join('--' + b for b in bad)}; "
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
    summary = tf_records.prepare(dataset, FLAGS.data_dir,
                                 layouts={s: layout for s in splits}, raw_path=FLAGS.raw_path,
                                 download=FLAGS.download, progress=FLAGS.progress,
                                 seed=FLAGS.seed, **options)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    cli.run(main)
