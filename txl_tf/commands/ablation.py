"""The paper's ablation (Table 6) at any scale: train the variants, evaluate each at several
attention lengths, tabulate.

`run_ablation(options, train_options, template, data)`:
  1. every variant (`txl_tf.ablation.variants`) is trained by `txl_tf.commands.train.train`
     into root/<variant>, with the same data, base configuration (`template`, sizes unchanged),
     steps, learning-rate schedule and seed; only attn_type, mem_len and the loss change. A
     variant already trained to its steps is not trained again (train() resumes);
  2. its newest checkpoint is evaluated on `options.split` at attention lengths k x its
     training attention length for k in `options.eval_multiples`
     (`txl_tf.ablation.attention_length` defines the reading of each kind);
  3. one JSON line per variant is printed, the attention-length curve is written to
     TensorBoard (root/<variant>/eval-attn, x = attention length, next to the variant's
     train/ and valid/ runs: `tensorboard --logdir root` overlays every variant), and at the
     end a table shaped like the paper's Table 6.

"init" is the loss at the training attention length (1x), "best" the lowest over the
evaluated lengths, and its attention length the shortest one reaching it (the paper's
"PPL init", "PPL best", "Attn Len").
"""
import dataclasses
import json
import os
import shutil
import time
from typing import Callable, List, Sequence

import tensorflow as tf

from txl_tf.storage import model_files
from txl_tf.ablation import attention_length
from txl_tf.ablation.variants import Variant, select_variants, variant_config
from txl_tf.commands.ablation_options import AblationOptions
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainOptions
from txl_tf.model.config_template import ConfigTemplate
from txl_tf.training.reporting.tensorboard import format_duration, metric_name, metric_value
from txl_tf.storage.model_dir_layout import ATTENTION_CURVE_DIR


def train_variant(variant: Variant, options: TrainOptions, template: ConfigTemplate,
                  data, root: str) -> dict:
    """Trains (or resumes) `variant` into root/<name>; returns train()'s summary.

    The run's flags text (model_dir/flags.txt) gets the variant's settings appended, so that
    `runners/train.py --flagfile=root/<name>/flags.txt` continues this very run."""
    model_dir = os.path.join(root, variant.name)
    flags_text = options.flags_text
    if flags_text:
        flags_text = flags_text.rstrip("\n") + "\n" + "\n".join([
            f"--model_dir={model_dir}", f"--attn_type={variant.attn_type}",
            f"--{'' if variant.half_loss else 'no'}half_loss"]
            + ([] if variant.recurrence else ["--mem_len=0"])) + "\n"
    variant_options = dataclasses.replace(options, model_dir=model_dir, flags_text=flags_text,
                                          half_loss=variant.half_loss)
    variant_template = dataclasses.replace(template,
                                           config=variant_config(template.config, variant))
    return train(variant_options, variant_template, data, name=f"variant {variant.name}")


def evaluate_variant(variant: Variant, model_dir: str, rows, multiples: Sequence[int],
                     level: str) -> dict:
    """The JSON-able result of the trained `variant` in `model_dir` on `rows`
    (`attention_length.stream_rows`) at each multiple of its training attention length."""
    model = model_files.load_model(model_dir, dropout=0.0, dropatt=0.0)
    c, metric = model.config, metric_name(level)
    train_len = attention_length.train_attention_length(c)
    evals = []
    for k in multiples:
        attn_len = int(k) * train_len
        nll, tokens = attention_length.attention_loss(model, rows, attn_len, variant.recurrence)
        evals.append({"multiple": int(k), "attn_len": attn_len, "tokens": tokens,
                      "loss": nll / tokens, metric: metric_value(nll / tokens, level),
                      "mem_len": attn_len - c.tgt_len if variant.recurrence else 0,
                      "window": None if variant.recurrence else attn_len})
    best = min(evals, key=lambda e: (e["loss"], e["attn_len"]))
    return {"variant": variant.name, "recurrence": variant.recurrence,
            "encoding": variant.encoding, "attn_type": variant.attn_type, "loss": variant.loss,
            "in_paper": variant.in_paper, "paper_ppl_init_best_attn": variant.paper,
            "params": int(model.count_params()), "tgt_len": c.tgt_len, "mem_len": c.mem_len,
            "train_attn_len": train_len, "metric": metric, "evals": evals,
            "init_loss": evals[0]["loss"], "best_loss": best["loss"],
            f"best_{metric}": best[metric], "best_attn_len": best["attn_len"],
            "checkpoint": model_files.latest_checkpoint(model_dir), "model_dir": model_dir}


def write_attention_curve(result: dict, model_dir: str) -> None:
    """eval_attn/loss and eval_attn/<bpc|ppl> at step = attention length, in
    model_dir/eval-attn (rewritten on every evaluation)."""
    directory = os.path.join(model_dir, ATTENTION_CURVE_DIR)
    shutil.rmtree(directory, ignore_errors=True)
    writer = tf.summary.create_file_writer(directory)
    with writer.as_default():
        for e in result["evals"]:
            for key in ("loss", result["metric"]):
                tf.summary.scalar(f"eval_attn/{key}", e[key], step=e["attn_len"])
    writer.close()


def _cell(value: float) -> str:
    return f"{value:.3f}" if value < 1e4 else f"{value:.3g}"


def _paper(row) -> str:
    return "not in the paper" if row is None else f"{row[0]:.2f}/{row[1]:.2f} @{row[2]}"


def format_table(results: List[dict]) -> str:
    """The results as a text table shaped like the paper's Table 6."""
    metric = results[0]["metric"]
    multiples = [e["multiple"] for e in results[0]["evals"]]
    head = (f"{'variant':<19} {'rec':<3} {'encoding':<14} {'loss':<4} {'params':>8} "
            f"{'train A':>7} | " + " | ".join(f"{str(k) + 'x: A loss/' + metric:<20}"
                                               for k in multiples)
            + f" | best loss/{metric} @A | paper WT103 ppl init/best @A")
    lines = [head, "-" * len(head)]
    for r in results:
        cells = [f"{e['attn_len']:>4} {_cell(e['loss'])}/{_cell(e[metric])}".ljust(20)
                 for e in r["evals"]]
        lines.append(
            f"{r['variant']:<19} {'yes' if r['recurrence'] else 'no':<3} {r['encoding']:<14} "
            f"{r['loss']:<4} {r['params']:>8,} {r['train_attn_len']:>7} | " + " | ".join(cells)
            + f" | {_cell(r['best_loss'])}/{_cell(r['best_' + metric])} @{r['best_attn_len']}"
            + f" | {_paper(r['paper_ppl_init_best_attn'])}")
    return "\n".join(lines)


def _baselines(data) -> str:
    info = data.info or {}
    unigram = info.get("unigram_loss_nats")
    if unigram is None and hasattr(data, "unigram_entropy"):
        unigram = data.unigram_entropy("train")
    known = [("best possible", info.get("best_loss_nats")), ("unigram", unigram)]
    return ", ".join(f"{name} {value:.4f} nats" for name, value in known if value is not None)


def _multiples(values) -> tuple:
    try:
        multiples = tuple(int(k) for k in values)
    except ValueError:
        multiples = ()
    if not multiples or min(multiples) < 1:
        raise ValueError(f"--eval_multiples must be integers >= 1, got {list(values)}.")
    return multiples


def _rows(data, options: AblationOptions):
    tokens = data.token_stream(options.split)
    if options.max_eval_tokens > 0:
        tokens = tokens[:options.max_eval_tokens]
    return attention_length.stream_rows(tokens, options.eval_rows)


def run_ablation(options: AblationOptions, train_options: TrainOptions,
                 template: ConfigTemplate, data,
                 echo: Callable[[str], None] = print) -> List[dict]:
    """Trains and evaluates every variant of `options` (see the module docstring).

    Args:
      options: the `AblationOptions`.
      train_options: the training options shared by every variant (model_dir and half_loss
        are set per variant).
      template: the base configuration without its vocabulary (`ConfigTemplate`).
      data: the prepared data (`tf_records.PreparedData`): what `train` takes, plus
        `token_stream(split)`, `level` and `info`.
      echo: where the progress lines, JSON lines and the table go.

    Returns:
      One result dict per variant (the JSON lines).

    Raises:
      VariantError: unknown variants, or recurrence without a base mem_len.
      ValueError: no multiple, or a split too short for `eval_rows` rows.
    """
    variants = select_variants(options.variants)
    multiples = _multiples(options.eval_multiples)
    echo(f"ablation: {len(variants)} variants x {train_options.train_steps} steps into "
         f"{options.root}; each training shows its ETA, the total estimate follows the first "
         "variant")
    results, start, rows = [], time.time(), None
    for i, variant in enumerate(variants):
        train_variant(variant, train_options, template, data, options.root)
        rows = _rows(data, options) if rows is None else rows  # the split exists once trained
        model_dir = os.path.join(options.root, variant.name)
        result = evaluate_variant(variant, model_dir, rows, multiples, data.level)
        write_attention_curve(result, model_dir)
        results.append(result)
        echo(json.dumps(result))
        spent = time.time() - start
        echo(f"ablation: {i + 1}/{len(variants)} done in {format_duration(spent)}; estimated "
             f"total {format_duration(spent / (i + 1) * len(variants))}")
    echo(format_table(results))
    baselines = _baselines(data)
    if baselines:
        echo(f"baselines: {baselines}")
    echo(f"TensorBoard: tensorboard --logdir {options.root}")
    return results
