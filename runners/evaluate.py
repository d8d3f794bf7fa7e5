"""Evaluate a txl-tf checkpoint on a split or on any text, with its own memory settings.

Examples:
  # the test split of the data the model was trained on (MODEL_DIR/corpus-info.json names it)
  python runners/evaluate.py --model_dir=runs/default
  # WikiText-103 test with the paper's evaluation settings (records made for tgt_len 128, bsz 16)
  python runners/evaluate.py --model_dir=/ckpt/wt103 --data_dir=/data/wt103 --split=test \
      --tgt_len=128 --mem_len=1600 --clamp_len=1000 --same_length --batch_size=16
  # any text file, tokenized with the model's vocabulary, every token scored
  python runners/evaluate.py --model_dir=/ckpt/enwik8 --text_file=page.txt --batch_size=1 \
      --last_segment=pad

Prints a progress bar on stderr and one JSON line on stdout:
  {"split", "tokens", "loss", "bpc", "ppl", "tgt_len", "mem_len", "clamp_len", "same_length", ...}
and writes loss / bpc / ppl to TensorBoard under `--tb_dir` (default MODEL_DIR/eval-SPLIT).
"""
import json
import os
import re
import sys

from runners import cli  # noqa: E402

cli.quiet_start()

from absl import app, flags  # noqa: E402

FLAGS = flags.FLAGS


def define_flags(fv=flags.FLAGS):
    """Defines the flags of this runner into `fv` (called only when it runs as a program, so
    that its functions can be imported beside other runners)."""
    def string(name, default, help_text):
        flags.DEFINE_string(name, default, help_text, flag_values=fv)

    def integer(name, default, help_text):
        flags.DEFINE_integer(name, default, help_text, flag_values=fv)

    def boolean(name, default, help_text):
        flags.DEFINE_boolean(name, default, help_text, flag_values=fv)

    string("model_dir", None, "Model directory (config.json + checkpoints).")
    string("checkpoint", None, "A checkpoint path prefix to evaluate instead of the newest one "
           "in --model_dir (e.g. MODEL_DIR/ckpt-20).")
    flags.DEFINE_enum("split", "test", ["train", "valid", "test"], "Split of --data_dir.",
                      flag_values=fv)
    string("data_dir", None, "Prepared data directory (default: the one the model was trained "
           "on, recorded in MODEL_DIR/corpus-info.json). Records for the evaluation layout "
           "(--tgt_len, --batch_size, --last_segment) are made from its cached token streams "
           "when missing.")
    string("text_file", None, "Evaluate this text file (UTF-8, or raw bytes for byte-level "
           "models) with the model's vocabulary instead of --data_dir.")
    string("vocab_file", None, "Vocabulary for --text_file (default MODEL_DIR/vocab.txt; "
           "corpus-info.json must sit beside it).")
    integer("tgt_len", None, "Evaluation segment length (default: the model's).")
    integer("mem_len", None, "Evaluation memory length (default: the model's).")
    integer("clamp_len", None, "Clamp relative distances (default: the model's).")
    boolean("same_length", None, "Same attention length for every query (default: the "
            "model's).")
    integer("batch_size", 10, "Number of parallel contiguous streams.")
    flags.DEFINE_enum("last_segment", "drop", ["drop", "pad"],
                      "drop: score whole segments only (reference); pad: also score each "
                      "stream's last partial segment, so every token with a predecessor is "
                      "scored.", flag_values=fv)
    integer("max_steps", None, "Stop after this many segments (for a quick look).")
    string("tb_dir", None, "TensorBoard directory (default MODEL_DIR/eval-SPLIT, or "
           "MODEL_DIR/eval-text for --text_file); '' to disable.")
    boolean("progress", True, "Show a progress bar on stderr.")


class EvalInputError(ValueError):
    """Bad evaluation input (flags, files, vocabulary)."""


def _checkpoint_step(path):
    match = re.search(r"ckpt-(\d+)$", path or "")
    return int(match.group(1)) if match else 0


def _input_fn(data_dir, split, layout, vocab_size, progress):
    """make_input_fn for the evaluation layout; records that are missing are written from the
    token streams `prepare_data.py` cached in data_dir (never downloads), else the error holds
    the exact prepare_data.py command."""
    import tf_records
    from tf_records.reader import make_input_fn

    try:
        return make_input_fn(data_dir, split, layout, repeat=False, vocab_size=vocab_size,
                             verify="size")
    except (tf_records.RecordsNotFoundError, tf_records.RecordsMismatchError) as error:
        info = tf_records.read_corpus_info(data_dir)
        if not info or "dataset" not in info:
            raise
        try:
            dataset, options = tf_records.recorded_corpus(data_dir)
            tf_records.prepare(dataset, data_dir, layouts={split: layout}, download=False,
                               progress=progress, **options)
        except tf_records.DataError:
            raise error from None
    return make_input_fn(data_dir, split, layout, repeat=False, vocab_size=vocab_size,
                         verify="size")


def trained_data_dir(model_dir):
    """The data directory the model in `model_dir` was trained on: `data_dir` of
    MODEL_DIR/corpus-info.json (written by train.py), else `--data_dir` of MODEL_DIR/flags.txt.
    One line on stderr says which; EvalInputError when neither names an existing directory."""
    info_path = os.path.join(model_dir, "corpus-info.json")
    data_dir, source = None, None
    if os.path.isfile(info_path):
        with open(info_path) as fh:
            data_dir, source = json.load(fh).get("data_dir"), info_path
    flags_path = os.path.join(model_dir, "flags.txt")
    if not data_dir and os.path.isfile(flags_path):
        with open(flags_path) as fh:
            found = [line.strip().split("=", 1)[1] for line in fh
                     if line.strip().startswith("--data_dir=")]
        data_dir, source = (found[-1], flags_path) if found else (None, None)
    if not data_dir:
        raise EvalInputError(f"{model_dir} does not record the data it was trained on; give "
                             "--data_dir (with --split) or --text_file.")
    if not os.path.isdir(data_dir):
        raise EvalInputError(f"the data {model_dir} was trained on ({data_dir}, from {source}) "
                             "is not there any more; give --data_dir (with --split) or "
                             "--text_file.")
    print(f"evaluating on {data_dir}, the data the model was trained on (from {source})",
          file=sys.stderr, flush=True)
    return data_dir


def run(argv_flags):
    """Runs the evaluation described by the flag values; returns the JSON-able result dict."""
    import itertools

    import tensorflow as tf

    import txl_tf
    from txl_tf.inference import evaluation
    from tf_records import model_vocab
    from tf_records.layout import RecordLayout
    from tf_records.tokenize import encode_text

    f = argv_flags
    if not f.model_dir:
        raise EvalInputError("--model_dir is required.")
    if f.data_dir and f.text_file:
        raise EvalInputError("give one of --data_dir (with --split) or --text_file, not both.")
    data_dir = f.data_dir or (None if f.text_file else trained_data_dir(f.model_dir))
    if f.batch_size < 1:
        raise EvalInputError(f"--batch_size must be >= 1, got {f.batch_size}.")
    config = txl_tf.load_config(f.model_dir)
    overrides = {"dropout": 0.0, "dropatt": 0.0}
    for name in ("tgt_len", "mem_len", "clamp_len", "same_length"):
        if getattr(f, name) is not None:
            overrides[name] = getattr(f, name)
    if f.checkpoint:
        if not tf.io.gfile.exists(f.checkpoint + ".index"):
            raise txl_tf.ModelDirError(f"--checkpoint={f.checkpoint}: no such checkpoint "
                                       f"({f.checkpoint}.index does not exist).")
        model = txl_tf.TransformerXL(config.replace(**overrides))
        txl_tf.restore_weights(model, f.checkpoint)
        checkpoint = f.checkpoint
    else:
        model = txl_tf.load_model(f.model_dir, **overrides)
        checkpoint = txl_tf.latest_checkpoint(f.model_dir)
    c = model.config

    if f.text_file:
        split = "text"
        mv = model_vocab.load_model_vocab(f.model_dir, c.n_token, f.vocab_file)
        if not os.path.isfile(f.text_file):
            raise EvalInputError(f"--text_file={f.text_file} does not exist.")
        with open(f.text_file, "rb") as fh:
            data = fh.read()
        tokens = encode_text(data, mv.rules, mv.vocab)
        batches, num_steps = evaluation.stream_batches(tokens, f.batch_size, c.tgt_len,
                                                       f.last_segment)
    else:
        split = f.split
        layout = RecordLayout(tgt_len=c.tgt_len, per_replica_batch=f.batch_size,
                              last_segment=f.last_segment)
        input_fn = _input_fn(data_dir, split, layout, c.n_token, f.progress)
        meta = input_fn.metadata
        vocab_path = os.path.join(f.model_dir, model_vocab.VOCAB_FILE)
        if os.path.isfile(vocab_path):
            mv = model_vocab.load_model_vocab(f.model_dir, c.n_token)
            if meta.get("vocab_checksum") not in (None, mv.vocab.checksum()):
                raise model_vocab.ModelVocabError(
                    f"vocabulary mismatch: the {split} records in {data_dir} were made with "
                    f"vocabulary {meta['vocab_checksum']}, the model's {vocab_path} is "
                    f"{mv.vocab.checksum()}. Evaluate on data prepared with the model's corpus.")
        batches, num_steps = input_fn(), meta["num_steps"]
    if f.max_steps:
        batches = itertools.islice(batches, f.max_steps)
        num_steps = min(num_steps, f.max_steps)

    evaluator = evaluation.Evaluator(model)
    result = evaluator.evaluate(batches, f.batch_size, num_steps, progress=f.progress)
    if result.tokens == 0:
        raise EvalInputError("no tokens were scored (empty split or text).")
    out = {"split": split, "tokens": result.tokens, "loss": result.loss, "bpc": result.bpc,
           "ppl": result.ppl, "tgt_len": c.tgt_len, "mem_len": c.mem_len,
           "clamp_len": c.clamp_len, "same_length": c.same_length,
           "batch_size": f.batch_size, "last_segment": f.last_segment,
           "checkpoint": checkpoint, "tokens_per_second": result.tokens_per_second}
    tb_dir = f.tb_dir if f.tb_dir is not None else os.path.join(f.model_dir, f"eval-{split}")
    if tb_dir:
        writer = tf.summary.create_file_writer(tb_dir)
        with writer.as_default():
            step = _checkpoint_step(checkpoint)
            for key in ("loss", "bpc", "ppl"):
                tf.summary.scalar(f"eval/{key}", out[key], step=step)
            tf.summary.text("eval/result", json.dumps(out), step=step)
        writer.flush()
    return out


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    cli.check_directories(model_dir=FLAGS.model_dir, data_dir=FLAGS.data_dir)
    cli.check_files(data_dir=FLAGS.data_dir, vocab_file=FLAGS.vocab_file)
    if FLAGS.text_file and os.path.isfile(FLAGS.text_file) \
            and os.path.getsize(FLAGS.text_file) == 0:
        raise EvalInputError(f"--text_file={FLAGS.text_file} is empty; give a text with at least "
                             "two tokens.")
    if FLAGS.model_dir and FLAGS.batch_size >= 1:
        import txl_tf
        from txl_tf.memory_estimate import check_step_fits
        check_step_fits(txl_tf.load_config(FLAGS.model_dir), FLAGS.batch_size,
                        tgt_len=FLAGS.tgt_len, mem_len=FLAGS.mem_len)
    out = run(FLAGS)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
