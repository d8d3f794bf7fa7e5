r"""Evaluate a txl-tf checkpoint on a split or on any text, with its own memory settings.

Examples:
  # the test split of the data the model was trained on (MODEL_DIR/corpus-info.json names it)
  python runners/evaluate.py --model_dir=runs/default
  # WikiText-103 test with the paper's evaluation settings (records made for tgt_len 128, bsz 16)
  python runners/evaluate.py --model_dir=/ckpt/wt103 --data_dir=/data/wt103 --split=test \
      --tgt_len=128 --mem_len=1600 --clamp_len=1000 --same_length --batch_size=16
  # the best checkpoint on validation (MODEL_DIR/best/) instead of the newest
  python runners/evaluate.py --model_dir=runs/default --checkpoint=best
  # the context curve: the same split at several memory lengths in one run
  python runners/evaluate.py --model_dir=runs/default --mem_lens=0,64,256,1024
  # any text file, tokenized with the model's vocabulary, every token scored
  python runners/evaluate.py --model_dir=/ckpt/enwik8 --text_file=page.txt --batch_size=1 \
      --last_segment=pad

Prints the checkpoint used and a progress bar on stderr, and one JSON line on stdout:
  {"split", "tokens", "loss", "bpc" (byte/char) or "ppl" (word), "unigram_entropy_nats",
   "verdict", "tgt_len", "mem_len", "clamp_len", "same_length", "checkpoint",
   "checkpoint_name", "checkpoint_step", ...}
and writes the loss and bpc or ppl to TensorBoard under `--tb_dir` (default
MODEL_DIR/eval-SPLIT). When the loss is not below the unigram entropy of the scored tokens, a
line on stderr says the model does not beat counting tokens.
"""
import json
import os

from absl import app, flags

import txl_tf
from runners import cli
from runners.cli import dataclass_flags
from tf_records.model_data import ModelData
from txl_tf.commands.evaluate_options import (LAST_SEGMENTS, SPLITS,  # noqa: F401
                                              EvalInputError, EvalOptions)
from txl_tf.model.memory_estimate import check_step_fits, check_weights_fit

FLAGS = flags.FLAGS


def define_flags(fv=flags.FLAGS) -> dict:
    """Defines the flags of this runner into `fv` (called only when it runs as a program, so
    that its functions can be imported beside other runners); returns the groups of --help."""
    dataclass_flags.define_flags(EvalOptions, fv,
                                 enums={"split": SPLITS, "last_segment": LAST_SEGMENTS})
    return {}


def run(options: EvalOptions) -> dict:
    """Runs the evaluation `options` describe; returns the JSON-able result dict."""
    cli.quiet_start()
    # TensorFlow loads here, after the flags were checked: --help and usage errors come at once.
    from txl_tf.commands.evaluate import evaluate_model
    return evaluate_model(options, ModelData())


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    options = dataclass_flags.options_from_flags(EvalOptions, FLAGS)
    cli.check_directories(model_dir=options.model_dir, data_dir=options.data_dir)
    cli.check_files(data_dir=options.data_dir, vocab_file=options.vocab_file,
                    text_file=options.text_file)
    cli.check_model_dirs(model_dir=options.model_dir)
    text_file = options.text_file
    if text_file and os.path.isfile(text_file) and os.path.getsize(text_file) == 0:
        raise EvalInputError(f"--text_file={text_file} is empty; give a text with at least "
                             "two tokens.")
    if options.model_dir and options.batch_size >= 1:
        cli.quiet_start()  # load_config reads the model directory with TensorFlow
        lengths = [int(m) for m in options.mem_lens if str(m).isdigit()]
        config = txl_tf.load_config(options.model_dir)
        check_weights_fit(config, source=f"{options.model_dir}/config.json")
        check_step_fits(config, options.batch_size,
                        tgt_len=options.tgt_len,
                        mem_len=max(lengths) if lengths else options.mem_len)
    print(json.dumps(run(options)), flush=True)
    return 0


if __name__ == "__main__":
    cli.run(main, groups=define_flags(), required=("model_dir",))
