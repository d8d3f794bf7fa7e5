"""Evaluate a txl-tf checkpoint on a split or on any text, with its own memory settings.

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

import tf_records
import txl_tf
from runners import cli
from runners.cli import dataclass_flags
from tf_records.vocab import model_vocab
from tf_records.text.tokenize import encode_text
from txl_tf.inference.eval_options import (LAST_SEGMENTS, SPLITS, EvalInputError,  # noqa: F401
                                           EvalOptions)
from txl_tf.memory_estimate import check_step_fits

FLAGS = flags.FLAGS


def define_flags(fv=flags.FLAGS) -> dict:
    """Defines the flags of this runner into `fv` (called only when it runs as a program, so
    that its functions can be imported beside other runners); returns the groups of --help."""
    dataclass_flags.define_flags(EvalOptions, fv,
                                 enums={"split": SPLITS, "last_segment": LAST_SEGMENTS})
    return {}


def text_data(options, config):
    """The streams of --text_file, tokenized with the model's vocabulary, and their unigram
    entropy."""
    mv = model_vocab.load_model_vocab(options.model_dir, config.n_token, options.vocab_file)
    if not os.path.isfile(options.text_file):
        raise EvalInputError(f"--text_file={options.text_file} does not exist.")
    with open(options.text_file, "rb") as fh:
        tokens = encode_text(fh.read(), mv.rules, mv.vocab)
    b, q, n = options.batch_size, config.tgt_len, len(tokens)
    try:
        data = tf_records.dataset_from_tokens(tokens, b, q, last_segment=options.last_segment)
    except tf_records.LayoutError:
        raise EvalInputError(
            f"the text has {n} tokens, too few for one segment of {b} streams x tgt_len {q} "
            f"(needs {b * (q + 1)}); lower --batch_size or --tgt_len, or use --last_segment=pad."
            if options.last_segment == "drop" else f"the text has {n} tokens, too few for {b} "
            "streams of at least 2 tokens; lower --batch_size.") from None
    return data, data.num_steps, "text", tf_records.unigram_entropy(tokens)


def split_data(options, config):
    """The records of --split in --data_dir for the evaluation layout (made from the token
    cache when missing), checked against the model's vocabulary, and the split's unigram
    entropy."""
    data = tf_records.PreparedData(options.data_dir)
    layout = data.layout(config.tgt_len, options.batch_size, last_segment=options.last_segment)
    input_fn = data.input_fn(options.split, layout, verify="checksum", vocab_size=config.n_token,
                             make_from_cache=True, progress=options.progress)
    made_with = input_fn.metadata.get("vocab_checksum")
    vocab_path = os.path.join(options.model_dir, model_vocab.VOCAB_FILE)
    if os.path.isfile(vocab_path):
        ours = model_vocab.load_model_vocab(options.model_dir, config.n_token).vocab.checksum()
        if made_with not in (None, ours):
            raise model_vocab.ModelVocabError(
                f"vocabulary mismatch: the {options.split} records in {options.data_dir} were "
                f"made with vocabulary {made_with}, the model's {vocab_path} is {ours}. "
                "Evaluate on data prepared with the model's corpus.")
    return (input_fn(), input_fn.metadata["num_steps"], options.split,
            data.unigram_entropy(options.split))


def run(options: EvalOptions) -> dict:
    """Runs the evaluation `options` describe; returns the JSON-able result dict."""
    cli.quiet_start()
    # TensorFlow loads here, after the flags were checked: --help and usage errors come at once.
    from txl_tf.inference.model_evaluation import evaluate_model
    return evaluate_model(options, text_data if options.text_file else split_data)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    options = dataclass_flags.options_from_flags(EvalOptions, FLAGS)
    cli.check_directories(model_dir=options.model_dir, data_dir=options.data_dir)
    cli.check_files(data_dir=options.data_dir, vocab_file=options.vocab_file)
    text_file = options.text_file
    if text_file and os.path.isfile(text_file) and os.path.getsize(text_file) == 0:
        raise EvalInputError(f"--text_file={text_file} is empty; give a text with at least "
                             "two tokens.")
    if options.model_dir and options.batch_size >= 1:
        cli.quiet_start()  # load_config reads the model directory with TensorFlow
        lengths = [int(m) for m in options.mem_lens if str(m).isdigit()]
        check_step_fits(txl_tf.load_config(options.model_dir), options.batch_size,
                        tgt_len=options.tgt_len,
                        mem_len=max(lengths) if lengths else options.mem_len)
    print(json.dumps(run(options)), flush=True)
    return 0


if __name__ == "__main__":
    cli.run(main, groups=define_flags(), required=("model_dir",))
