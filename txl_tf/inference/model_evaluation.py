"""Evaluating a model directory's checkpoint with its own run settings: `EvalOptions` -> result.

`evaluate_model(options, data_fn)` loads the model (checkpoint, run-setting overrides, dropout
off), asks `data_fn` for the evaluation streams (the caller owns the data: a prepared split or a
tokenized text), runs the evaluation loop (`txl_tf.inference.evaluation.Evaluator`), writes
loss / bpc / ppl to TensorBoard and returns the result dict that runners/evaluate.py prints:
  {"split", "tokens", "loss", "bpc", "ppl", "tgt_len", "mem_len", "clamp_len", "same_length",
   "batch_size", "last_segment", "checkpoint", "tokens_per_second"}; with `mem_lens` (the
context curve) also "curve": [{"mem_len", "loss", "bpc", "ppl", "tokens"}], and the top-level
figures are those of the last memory length.
"""
import dataclasses
import json
import os
import re
import sys
from typing import Callable, Optional

import tensorflow as tf

from txl_tf import model_dir as model_files
from txl_tf.inference import evaluation
from txl_tf.model import TransformerXL

SPLITS = ("train", "valid", "test")
LAST_SEGMENTS = ("drop", "pad")


@dataclasses.dataclass
class EvalOptions:
    """What to evaluate and how (the flags of runners/evaluate.py).

    Attributes:
      model_dir: Model directory (config.json + checkpoints).
      checkpoint: A checkpoint path prefix to evaluate instead of the newest one in
        --model_dir (e.g. MODEL_DIR/ckpt-20).
      split: Split of --data_dir.
      data_dir: Prepared data directory (default: the one the model was trained on, recorded
        in MODEL_DIR/corpus-info.json). Records for the evaluation layout (--tgt_len,
        --batch_size, --last_segment) are made from its cached token streams when missing.
      text_file: Evaluate this text file (UTF-8, or raw bytes for byte-level models) with the
        model's vocabulary instead of --data_dir.
      vocab_file: Vocabulary for --text_file (default MODEL_DIR/vocab.txt; corpus-info.json
        must sit beside it).
      tgt_len: Evaluation segment length (default: the model's).
      mem_len: Evaluation memory length (default: the model's).
      clamp_len: Clamp relative distances (default: the model's).
      same_length: Same attention length for every query (default: the model's).
      batch_size: Number of parallel contiguous streams.
      last_segment: drop: score whole segments only (reference); pad: also score each
        stream's last partial segment, so every token with a predecessor is scored.
      max_steps: Stop after this many segments (for a quick look).
      tb_dir: TensorBoard directory (default MODEL_DIR/eval-SPLIT, or MODEL_DIR/eval-text for
        --text_file); '' to disable.
      progress: Show a progress bar on stderr.
      mem_lens: Evaluate at each of these memory lengths in one run (e.g. 0,64,256,1024): the
        context curve. One line per length on stderr, the JSON result gains "curve", and
        TensorBoard gets eval/loss_by_mem_len with x = the memory length. Replaces --mem_len.
    """
    model_dir: Optional[str] = None
    checkpoint: Optional[str] = None
    split: str = "test"
    data_dir: Optional[str] = None
    text_file: Optional[str] = None
    vocab_file: Optional[str] = None
    tgt_len: Optional[int] = None
    mem_len: Optional[int] = None
    clamp_len: Optional[int] = None
    same_length: Optional[bool] = None
    batch_size: int = 10
    last_segment: str = "drop"
    max_steps: Optional[int] = None
    tb_dir: Optional[str] = None
    progress: bool = True
    mem_lens: tuple = ()


class EvalInputError(ValueError):
    """Bad evaluation input (flags, files, vocabulary)."""


# data_fn(options, config) -> (batches, num_steps, split name): the evaluation streams of
# `options.batch_size` rows and segments of config.tgt_len (see `Evaluator.evaluate`).
DataFn = Callable[[EvalOptions, object], tuple]


def trained_data_dir(model_dir: str) -> str:
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


class EvalOutputError(OSError):
    """The TensorBoard directory cannot be written (exit code 1)."""
    exit_code = 1


def _tb_dir(options: EvalOptions, split: str) -> str:
    return (options.tb_dir if options.tb_dir is not None
            else os.path.join(options.model_dir, f"eval-{split}"))


def check_tb_dir(tb_dir: str) -> None:
    """An `EvalOutputError` before any work when `tb_dir` (or its nearest existing parent) is
    not writable, e.g. a read-only model directory."""
    if not tb_dir or "://" in tb_dir:
        return
    existing = os.path.abspath(tb_dir)
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.access(existing, os.W_OK):
        raise EvalOutputError(
            f"cannot write the TensorBoard summaries to {tb_dir}: {existing} is read-only or not "
            "writable; give --tb_dir=<a writable directory>, or --tb_dir= to write none.")


def checked_options(options: EvalOptions) -> EvalOptions:
    """`options` with `data_dir` resolved (the trained-on data when neither --data_dir nor
    --text_file is given). Raises EvalInputError for contradicting or missing flags."""
    if not options.model_dir:
        raise EvalInputError("--model_dir is required.")
    if options.data_dir and options.text_file:
        raise EvalInputError("give one of --data_dir (with --split) or --text_file, not both.")
    data_dir = options.data_dir or (None if options.text_file
                                    else trained_data_dir(options.model_dir))
    if options.batch_size < 1:
        raise EvalInputError(f"--batch_size must be >= 1, got {options.batch_size}.")
    mem_lens = tuple(_memory_length(m) for m in options.mem_lens)
    if mem_lens and options.mem_len is not None:
        raise EvalInputError("give --mem_len or --mem_lens, not both.")
    return dataclasses.replace(options, data_dir=data_dir, mem_lens=mem_lens)


def _memory_length(text) -> int:
    """A --mem_lens entry as an int >= 0, or EvalInputError naming it."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = -1
    if value < 0:
        raise EvalInputError(f"--mem_lens entries must be integers >= 0, got {text!r}.")
    return value


def load_model(options: EvalOptions):
    """(model with the evaluation run settings and dropout off, checkpoint path)."""
    overrides = {"dropout": 0.0, "dropatt": 0.0}
    for name in ("tgt_len", "mem_len", "clamp_len", "same_length"):
        if getattr(options, name) is not None:
            overrides[name] = getattr(options, name)
    checkpoint = options.checkpoint
    if not checkpoint:
        model = model_files.load_model(options.model_dir, **overrides)
        return model, model_files.latest_checkpoint(options.model_dir)
    config = model_files.load_config(options.model_dir)
    if not tf.io.gfile.exists(checkpoint + ".index"):
        raise model_files.ModelDirError(f"--checkpoint={checkpoint}: no such checkpoint "
                                        f"({checkpoint}.index does not exist).")
    model = TransformerXL(config.replace(**overrides))
    model_files.restore_weights(model, checkpoint)
    return model, checkpoint


def write_summaries(out: dict, tb_dir: str) -> None:
    """loss / bpc / ppl scalars and the result as text, at the checkpoint's step."""
    match = re.search(r"ckpt-(\d+)$", out["checkpoint"] or "")
    step = int(match.group(1)) if match else 0
    writer = tf.summary.create_file_writer(tb_dir)
    with writer.as_default():
        for key in ("loss", "bpc", "ppl"):
            tf.summary.scalar(f"eval/{key}", out[key], step=step)
        tf.summary.text("eval/result", json.dumps(out), step=step)
    writer.flush()


def write_curve(curve: list, tb_dir: str) -> None:
    """The context curve: eval/loss_by_mem_len (and bpc, ppl) with x = memory length."""
    writer = tf.summary.create_file_writer(tb_dir)
    with writer.as_default():
        for point in curve:
            for key in ("loss", "bpc", "ppl"):
                tf.summary.scalar(f"eval/{key}_by_mem_len", point[key], step=point["mem_len"])
    writer.flush()


def context_curve(model, batches, num_steps, options: EvalOptions) -> list:
    """[(memory length, `EvalResult`)] of the same streams at every length of
    `options.mem_lens`; each point also goes to stderr as it is measured."""
    curve = []
    for mem_len in options.mem_lens:
        result = evaluation.Evaluator(model, mem_len=mem_len).evaluate(
            batches, options.batch_size, num_steps, progress=options.progress)
        curve.append((mem_len, result))
        print(f"mem_len {mem_len:>6}: loss {result.loss:.4f} | bpc {result.bpc:.4f} | "
              f"ppl {result.ppl:.3f} ({result.tokens:,} tokens)", file=sys.stderr, flush=True)
    return curve


def _curve_fields(curve: list) -> dict:
    """The result's fields of a context curve: the last length's mem_len and every point."""
    return {"mem_len": curve[-1][0],
            "curve": [{"mem_len": m, "loss": r.loss, "bpc": r.bpc, "ppl": r.ppl,
                       "tokens": r.tokens} for m, r in curve]}


def evaluate_model(options: EvalOptions, data_fn: DataFn) -> dict:
    """Evaluates the checkpoint of `options.model_dir` on the streams `data_fn` gives.

    Args:
      options: the `EvalOptions`.
      data_fn: `data_fn(options, config) -> (batches, num_steps, split)`: called with the
        checked options (data_dir resolved) and the evaluation config.

    Returns:
      The JSON-able result dict (see the module docstring).

    Raises:
      EvalInputError: bad options or nothing scored. ModelDirError: no model or checkpoint.
    """
    options = checked_options(options)
    model, checkpoint = load_model(options)
    c = model.config
    batches, num_steps, split = data_fn(options, c)
    check_tb_dir(_tb_dir(options, split))
    if options.max_steps:
        num_steps = min(num_steps, options.max_steps)
    curve = context_curve(model, batches, num_steps, options) if options.mem_lens else []
    result = curve[-1][1] if curve else evaluation.Evaluator(model).evaluate(
        batches, options.batch_size, num_steps, progress=options.progress)
    if result.tokens == 0:
        raise EvalInputError("no tokens were scored (empty split or text).")
    out = {"split": split, "tokens": result.tokens, "loss": result.loss, "bpc": result.bpc,
           "ppl": result.ppl, "tgt_len": c.tgt_len, "mem_len": c.mem_len,
           "clamp_len": c.clamp_len, "same_length": c.same_length,
           **(_curve_fields(curve) if curve else {}),
           "batch_size": options.batch_size, "last_segment": options.last_segment,
           "checkpoint": checkpoint, "tokens_per_second": result.tokens_per_second}
    tb_dir = _tb_dir(options, split)
    if tb_dir:
        write_summaries(out, tb_dir)
        if curve:
            write_curve(out["curve"], tb_dir)
    return out
