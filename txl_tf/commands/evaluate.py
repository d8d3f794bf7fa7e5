"""Evaluating a model directory's checkpoint with its own run settings: `EvalOptions` -> result.

`evaluate_model(options, data)` loads the model (checkpoint, run-setting overrides, dropout
off), gets the evaluation streams from `data` (`txl_tf.model.data_interfaces.TextData`: a prepared
split, or the text file tokenized with the model's vocabulary), runs the evaluation loop
(`txl_tf.inference.evaluation.Evaluator`), writes the loss and its unit to TensorBoard and returns
the result dict that runners/evaluate.py prints:
  {"split", "tokens", "loss", UNIT, "unigram_entropy_nats", "unigram_" + UNIT, "verdict",
   "tgt_len", "mem_len", "clamp_len", "same_length", "batch_size", "last_segment",
   "checkpoint" (its path), "checkpoint_name" (latest, best, ckpt-N), "checkpoint_step",
   "tokens_per_second"}
where UNIT is the level's (`txl_tf/loss/loss_report.py`: bpc for byte and char models, ppl for word
models, bits_per_token for a model directory that records no level), the unigram entropy is
that of the scored tokens themselves (None when the data does not give it) and
"verdict" the line that says the model did not beat it (also printed on stderr), or None. With
`mem_lens` (the context curve) also "curve": [{"mem_len", "loss", UNIT, "tokens"}], and the
top-level figures are those of the last memory length.
"""
import dataclasses
import json
import os
import re
import sys
from typing import Optional

import tensorflow as tf

from txl_tf.storage import model_files
from txl_tf.storage import model_dir_layout as layout
from txl_tf.runtime.ranges import check_fields
from txl_tf.commands.evaluate_options import (LAST_SEGMENTS, SPLITS,  # noqa: F401
                                              EvalInputError, EvalOptions)
from txl_tf.commands.inference_model import load_inference_model
from txl_tf.inference import evaluation
from txl_tf.loss.loss_report import CorpusFacts, format_loss, loss_fields, unit_name, verdict
from txl_tf.model.context_settings import ContextSettings
from txl_tf.model.data_interfaces import EvalStreams, TextData
from txl_tf.storage.text_files import regular_file_problem
from untrusted_files import reading, schema


def trained_data_dir(model_dir: str) -> str:
    """The data directory the model in `model_dir` was trained on: `data_dir` of
    MODEL_DIR/corpus-info.json (written by train.py), else `--data_dir` of MODEL_DIR/flags.txt.
    One line on stderr says which; EvalInputError when neither names an existing directory."""
    info_path = layout.path(model_dir, layout.CORPUS_INFO_FILE)
    data_dir, source = None, None
    if os.path.lexists(info_path):
        info = reading.read_json(info_path, inside=model_dir, error=EvalInputError,
                                 schema=schema.INFO_FIELDS_SCHEMA,
                                 fix="give --data_dir (with --split) or --text_file")
        data_dir, source = info.get("data_dir"), info_path
    flags_path = layout.path(model_dir, layout.FLAGS_FILE)
    if not data_dir and os.path.lexists(flags_path):
        text = reading.read_text(flags_path, inside=model_dir, error=EvalInputError,
                                 max_bytes=reading.MAX_FLAGFILE_BYTES)
        found = [line.strip().split("=", 1)[1] for line in text.splitlines()
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


def trained_level(model_dir: str) -> Optional[str]:
    """The level (byte, char, word) MODEL_DIR/corpus-info.json records, or None."""
    info = reading.read_json_or_none(layout.path(model_dir, layout.CORPUS_INFO_FILE),
                                     schema=schema.INFO_FIELDS_SCHEMA)
    return None if info is None else info.get("level")


class EvalOutputError(OSError):
    """The TensorBoard directory cannot be written (exit code 1)."""
    exit_code = 1


def _tb_dir(options: EvalOptions, split: str) -> str:
    return (options.tb_dir if options.tb_dir is not None
            else layout.eval_dir(options.model_dir, split))


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


def checked_options(options: EvalOptions) -> tuple:
    """(`options` with `data_dir` resolved (the trained-on data when neither --data_dir nor
    --text_file is given), the `CheckpointChoice` of `options.checkpoint`). Raises
    EvalInputError for contradicting or missing flags, ModelDirError for a checkpoint that is
    not there."""
    if not options.model_dir:
        raise EvalInputError("--model_dir is required.")
    choice = model_files.choose_checkpoint(options.model_dir, options.checkpoint)
    if options.data_dir and options.text_file:
        raise EvalInputError("give one of --data_dir (with --split) or --text_file, not both.")
    data_dir = options.data_dir or (None if options.text_file
                                    else trained_data_dir(options.model_dir))
    check_fields(options, EvalInputError, prefix="--")  # EvalOptions.RANGES
    mem_lens = tuple(_memory_length(m) for m in options.mem_lens)
    if mem_lens and options.mem_len is not None:
        raise EvalInputError("give --mem_len or --mem_lens, not both.")
    return dataclasses.replace(options, data_dir=data_dir, mem_lens=mem_lens), choice


def _memory_length(text) -> int:
    """A --mem_lens entry as an int >= 0, or EvalInputError naming it."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = -1
    if value < 0:
        raise EvalInputError(f"--mem_lens entries must be integers >= 0, got {text!r}.")
    return value


def run_settings(options: EvalOptions, config) -> ContextSettings:
    """The evaluation's run settings: those the options give, else the model's (`config`)."""
    return ContextSettings.of_config(config, options.tgt_len, options.mem_len,
                                     options.clamp_len, options.same_length)


def text_streams(options: EvalOptions, config, data: TextData) -> EvalStreams:
    """The streams of `options.text_file`, tokenized with the model's vocabulary, and their
    unigram entropy."""
    text = data.model_text(options.model_dir, config.n_token, options.vocab_file)
    problem = regular_file_problem(options.text_file)
    if problem:
        raise EvalInputError(f"--text_file={options.text_file} {problem}; give a file.")
    if not os.path.isfile(options.text_file):
        raise EvalInputError(f"--text_file={options.text_file} does not exist.")
    with open(options.text_file, "rb") as fh:
        tokens = text.encode_document(fh.read())
    b, q, n = options.batch_size, config.tgt_len, len(tokens)
    try:
        batches, num_steps = data.document_streams(tokens, b, q, options.last_segment)
    except ValueError:  # the data package's layout error: too few tokens for the streams
        raise EvalInputError(
            f"the text has {n} tokens, too few for one segment of {b} streams x tgt_len {q} "
            f"(needs {b * (q + 1)}); lower --batch_size or --tgt_len, or use --last_segment=pad."
            if options.last_segment == "drop" else f"the text has {n} tokens, too few for {b} "
            "streams of at least 2 tokens; lower --batch_size.") from None
    return EvalStreams(batches, num_steps, "text", data.unigram_entropy(tokens))


def split_streams(options: EvalOptions, config, data: TextData) -> EvalStreams:
    """The records of `options.split` in `options.data_dir` for the evaluation layout, checked
    against the model's vocabulary, and the split's unigram entropy."""
    return EvalStreams(*data.split_streams(
        options.data_dir, options.split, config.tgt_len, options.batch_size,
        options.last_segment, config.n_token, options.model_dir, progress=options.progress))


def write_summaries(out: dict, tb_dir: str, unit: str) -> None:
    """The loss and `unit` scalars and the result as text, at the checkpoint's step."""
    match = re.search(rf"{layout.CHECKPOINT_NAME}-(\d+)$", out["checkpoint"] or "")
    step = out["checkpoint_step"]
    if step is None:
        step = int(match.group(1)) if match else 0
    writer = tf.summary.create_file_writer(tb_dir)
    with writer.as_default():
        for key in ("loss", unit):
            tf.summary.scalar(f"eval/{key}", out[key], step=step)
        tf.summary.text("eval/result", json.dumps(out), step=step)
    writer.flush()


def write_curve(curve: list, tb_dir: str, unit: str) -> None:
    """The context curve: eval/loss_by_mem_len (and the unit's) with x = memory length."""
    writer = tf.summary.create_file_writer(tb_dir)
    with writer.as_default():
        for point in curve:
            for key in ("loss", unit):
                tf.summary.scalar(f"eval/{key}_by_mem_len", point[key], step=point["mem_len"])
    writer.flush()


def context_curve(model, batches, num_steps, options: EvalOptions, level=None) -> list:
    """[(memory length, `EvalResult`)] of the same streams at every length of
    `options.mem_lens` (the other run settings the model's); each point also goes to stderr
    as it is measured (in the unit of `level`)."""
    curve = []
    settings = ContextSettings.of_config(model.config)
    for mem_len in options.mem_lens:
        result = evaluation.Evaluator(model, settings.replace(mem_len=mem_len)).evaluate(
            batches, options.batch_size, num_steps, progress=options.progress)
        curve.append((mem_len, result))
        print(f"mem_len {mem_len:>6}: {format_loss(result.loss, level)} "
              f"({result.tokens:,} tokens)", file=sys.stderr, flush=True)
    return curve


def _curve_fields(curve: list, level) -> dict:
    """The result's fields of a context curve: the last length's mem_len and every point."""
    return {"mem_len": curve[-1][0],
            "curve": [{"mem_len": m, **loss_fields(r.loss, level), "tokens": r.tokens}
                      for m, r in curve]}


def evaluate_model(options: EvalOptions, data: TextData) -> dict:
    """Evaluates the checkpoint of `options.model_dir` on a split or on `options.text_file`.

    Args:
      options: the `EvalOptions`.
      data: the `TextData` (`txl_tf/model/data_interfaces.py`;
        `tf_records.model_data.ModelData`): the model's vocabulary and the split's records or the text's streams.

    Returns:
      The JSON-able result dict (see the module docstring).

    Raises:
      EvalInputError: bad options or nothing scored. ModelDirError: no model or checkpoint.
    """
    options, choice = checked_options(options)
    settings = run_settings(options, model_files.load_config(options.model_dir))
    model = load_inference_model(options.model_dir, choice, settings)
    c = model.config
    batches, num_steps, split, unigram = (text_streams if options.text_file
                                          else split_streams)(options, c, data)
    level = trained_level(options.model_dir)
    check_tb_dir(_tb_dir(options, split))
    if options.max_steps:
        num_steps = min(num_steps, options.max_steps)
    curve = (context_curve(model, batches, num_steps, options, level) if options.mem_lens
             else [])
    result = curve[-1][1] if curve else evaluation.Evaluator(model, settings).evaluate(
        batches, options.batch_size, num_steps, progress=options.progress)
    if result.tokens == 0:
        raise EvalInputError("no tokens were scored (empty split or text).")
    baseline = loss_fields(unigram, level, "unigram_")
    out = {"split": split, "tokens": result.tokens, **loss_fields(result.loss, level),
           "unigram_entropy_nats": baseline.pop("unigram_loss"), **baseline,
           "verdict": verdict(result.loss, unigram, level, split,
                              CorpusFacts.from_model_dir(options.model_dir, split)),
           **dataclasses.asdict(settings),
           **(_curve_fields(curve, level) if curve else {}),
           "batch_size": options.batch_size, "last_segment": options.last_segment,
           **choice.to_json(), "tokens_per_second": result.tokens_per_second}
    tb_dir = _tb_dir(options, split)
    if tb_dir:
        write_summaries(out, tb_dir, unit_name(level))
        if curve:
            write_curve(out["curve"], tb_dir, unit_name(level))
    if out["verdict"]:
        print(out["verdict"], file=sys.stderr, flush=True)
    return out
