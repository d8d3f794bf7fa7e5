r"""Relative effective context length of a model group (the paper's Table 8, Appendix C).

Example:
  python runners/recl.py --model_dirs=runs/xl,runs/no_recurrence,runs/vanilla \
      --split=valid --context_lengths=16,32,48,64,80,96,112,128 --num_tokens=2000

Every model scores the same tokens of the split with exactly c tokens of context for each c
(models with memory read the c tokens in segments, carrying their memory; models without read one
window of c tokens); RECL is then searched as in Appendix C at r = 0.1, 0.5 and 1.0. Prints the
table (model | RECL at each r; ">=c" when the gain had not fallen below the threshold by the
longest context) and one JSON line; docs/evaluation.md explains the method.
"""
import json
import os

from absl import app, flags

import tf_records
import txl_tf
from runners import cli
from runners.cli.dataclass_flags import define_flags, options_from_flags
from txl_tf.commands.recl_options import ReclOptions

FLAGS = flags.FLAGS


def recorded_data_dir(model_dir: str) -> str:
    """The data_dir the model was trained on (its corpus-info.json), or a usage error."""
    info = tf_records.read_corpus_info(model_dir) or {}
    if not info.get("data_dir"):
        raise app.UsageError(f"{model_dir} does not record its training data; give --data_dir.")
    if not os.path.isdir(info["data_dir"]):
        raise app.UsageError(f"{model_dir} was trained on the data in {info['data_dir']}, which "
                             "is no longer there; give --data_dir.")
    return info["data_dir"]


def check_one_vocabulary(model_dirs, data_dir) -> None:
    """A usage error unless the group and the data share one vocabulary: the vocab_checksum of
    every corpus-info.json that records one, and the vocabulary size always."""
    vocabularies = {}
    for where in [*model_dirs, data_dir]:
        if not os.path.isdir(where):
            raise app.UsageError(f"{where} is not a directory; give trained model directories "
                                 "(--model_dirs) and a prepared --data_dir.")
    for where in [*model_dirs, data_dir]:
        info = tf_records.read_corpus_info(where) or {}
        size = (txl_tf.load_config(where).n_token if where != data_dir
                else info.get("vocab_size"))
        vocabularies[where] = (info.get("vocab_checksum"), size)
    checksums = {c for c, _ in vocabularies.values() if c}
    sizes = {s for _, s in vocabularies.values() if s}
    if len(checksums) > 1 or len(sizes) > 1:
        listed = ", ".join(f"{w} ({s} tokens{', checksum ' + c if c else ''})"
                           for w, (c, s) in vocabularies.items())
        raise app.UsageError(
            f"the group does not share one vocabulary: {listed}; RECL compares models on the "
            "same tokens: give models trained on one vocabulary and data prepared with it.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]} (flags are --name=value).")
    options = options_from_flags(ReclOptions, FLAGS)
    if not options.model_dirs:
        raise app.UsageError("give the group with --model_dirs=DIR1,DIR2,...")
    cli.check_model_dirs(model_dirs=options.model_dirs)
    cli.quiet_start()
    # TensorFlow loads here, after the flags were checked: --help and usage errors come at once.
    from txl_tf.commands.recl import check_options, load_group, measure_recl
    from txl_tf.inference.relative_effective_context import format_recl_table, recl_rows
    check_options(options)
    data_dir = options.data_dir
    if not data_dir and os.path.isdir(options.model_dirs[0]):
        data_dir = recorded_data_dir(options.model_dirs[0])
    check_one_vocabulary(options.model_dirs, data_dir)
    tokens = tf_records.load_token_stream(data_dir, options.split)
    models = load_group(options.model_dirs)
    table, losses = measure_recl(models, tokens, options)
    print(format_recl_table(list(models), table))
    print("recl " + json.dumps({"split": options.split, "data_dir": data_dir,
                                "context_lengths": [int(c) for c in options.context_lengths],
                                "num_tokens": int(losses.shape[-1]),
                                "num_tokens_requested": options.num_tokens,
                                "threshold": options.threshold,
                                "models": recl_rows(list(models), table)}))


if __name__ == "__main__":
    define_flags(ReclOptions)
    cli.run(main, groups={}, required=("model_dirs",))
