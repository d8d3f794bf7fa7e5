r"""Prepare a corpus: download (or take --raw_path), build the vocabulary, token caches and records.

Examples:
  python runners/prepare_data.py --dataset=builtin --data_dir=data/builtin \
      --splits=train,valid,test --tgt_len=128 --per_replica_batch=8
  python runners/prepare_data.py --dataset=enwik8 --data_dir=data/enwik8 --splits=train \
      --tgt_len=512 --per_replica_batch=22
  python runners/prepare_data.py --dataset=text --raw_path=my.txt --level=word --data_dir=data/my

Unknown flags are errors. The last line of stdout is a JSON summary.
"""
import json

from absl import app, flags

import tf_records
from runners import cli
from runners.cli import data_flags, flag_ranges
from runners.cli.dataclass_flags import define_flags, given, options_from_flags

FLAGS = flags.FLAGS
# The record layout's defaults are those of runners/train.py's defaults (tgt_len 64, 16
# streams, one replica), so that train.py reuses these records.
LAYOUT_DEFAULTS = {"tgt_len": 64, "per_replica_batch": 16}


def define_all_flags(fv: flags.FlagValues = FLAGS) -> dict:
    """The data, record layout and corpus flags of this runner (--data_dir is required);
    returns the groups of --help."""
    data = define_flags(tf_records.DataOptions, fv, defaults={"data_dir": None},
                        enums={"dataset": sorted(tf_records.CORPORA)}, skip=("corpus_options",))
    flags.DEFINE_list("splits", ["train", "valid", "test"],
                      "Splits to write records for ('' = none).", flag_values=fv)
    layout = define_flags(tf_records.RecordLayout, fv, defaults=LAYOUT_DEFAULTS,
                          enums={"last_segment": ["drop", "pad"]})
    flag_ranges.define_integer("seed", 0, "Seed of the rotation offsets (num_passes > 1).",
                               (0, 2**63 - 1, "NumPy's generator seed"), flag_values=fv)
    flags.DEFINE_bool("progress", True, "Show progress on stderr.", flag_values=fv)
    # Corpus options: only the ones given on the command line are passed to the corpus.
    corpus = data_flags.define_corpus_flags(fv)
    return {"Data": data, "Corpus options (default: the corpus' own)": corpus,
            "Record layout": ["splits", *layout, "seed"]}


def check_corpus_flags(dataset: str, options: dict) -> None:
    """A usage error for corpus flags `dataset` does not take."""
    known = tf_records.CORPORA[dataset].OPTIONS
    bad = sorted(set(options) - set(known))
    if bad:
        raise app.UsageError(
            f"--dataset={dataset} does not take "
            f"{', '.join('--' + data_flags.flag_of(b) for b in bad)}; its options are "
            f"{', '.join('--' + data_flags.flag_of(o) for o in sorted(known))}.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    given_options = data_flags.corpus_options(FLAGS)
    # A prepared data_dir keeps its recorded dataset and options unless others are given.
    data = tf_records.PreparedData(options_from_flags(
        tf_records.DataOptions, FLAGS, skip=("corpus_options",),
        dataset=FLAGS.dataset if given(FLAGS, "dataset") else None,
        corpus_options=given_options))
    check_corpus_flags(data.dataset, given_options)
    layout = options_from_flags(tf_records.RecordLayout, FLAGS)
    cli.check_directories(data_dir=FLAGS.data_dir)
    cli.check_files(raw_path=FLAGS.raw_path, train_path=FLAGS.train_path,
                    valid_path=FLAGS.valid_path, test_path=FLAGS.test_path,
                    vocab_path=FLAGS.vocab_path)
    with cli.locked(FLAGS.data_dir):
        summary = data.prepare({s: layout for s in FLAGS.splits if s}, progress=FLAGS.progress,
                               seed=FLAGS.seed)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    cli.run(main, groups=define_all_flags(), required=("data_dir",))
