"""The opening of a training run: `announce` (configuration, hparams session, the chief's
first lines) and `estimate_duration` (the line estimating the run's duration)."""
import dataclasses
import json
from typing import Optional

import tensorflow as tf

from txl_tf.loss.loss_report import format_value
from txl_tf.training.measurement import duration
from txl_tf.training.reporting.hparams_session import run_hparams
from txl_tf.training.measurement.matmul_rate import measure_matmul_rate
from txl_tf.devices.step_compilation import strategy_devices
from txl_tf.training.reporting.tensorboard import RunSummaries
from txl_tf.training.training_run import TrainingRun

COMPUTE_DTYPES = {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16,
                  "mixed_float16": tf.float16}


def announce(run: TrainingRun, summaries: RunSummaries, step: int, resumed: bool,
             baselines: dict, name: Optional[str] = None) -> None:
    """The configuration text (new runs), the run's hparams session and the chief's opening
    lines (the first one names the run when it has a `name`; the second says how the step is
    compiled; then the unigram baseline of each split, `baselines`: {split: nats or None},
    beside the lines whose loss is measured on it)."""
    o, place, config, data = run.options, run.place, run.config, run.data
    if not resumed:  # a resumed run stays the session its start wrote (TensorBoard reads one)
        run.hparams.start(run_hparams(config, o, {"dataset": data.dataset, "level": data.level,
                                                  "vocab_size": data.vocab_size}))
        summaries.text("config", "```\n" + json.dumps(
            {"model": config.to_dict(), "run": dataclasses.asdict(o),
             "data": {"data_dir": data.data_dir, "dataset": data.dataset,
                      "corpus_options": data.corpus_options},
             "replicas": place.replicas, "global_batch": place.global_batch,
             "per_replica_batch": place.per_replica,
             "unigram_entropy_nats": baselines.get("train"),
             "valid_unigram_entropy_nats": baselines.get("valid")},
            indent=2, default=str) + "\n```")
    if not place.is_chief:
        return
    title = f"txl-tf training {name}" if name else "txl-tf training"
    print(f"{title}: {config.n_layer} layers, d_model {config.d_model}, "
          f"{run.model.count_params():,} parameters, {data.dataset} ({data.level}, vocab "
          f"{data.vocab_size}), {place.replicas} replica(s) x batch {place.per_replica} x "
          f"tgt_len {config.tgt_len}, {o.train_steps} steps"
          + (f", resuming at step {step}" if resumed else ""), flush=True)
    print(run.compilation.line, flush=True)
    for split, lines in (("train", "the step lines' loss"), ("valid", "the valid lines'")):
        if baselines.get(split) is not None:
            print(f"unigram baseline of the {split} split: {baselines[split]:.4f} nats = "
                  f"{format_value(baselines[split], data.level)} (for {lines})", flush=True)
    print(f"TensorBoard: tensorboard --logdir {o.model_dir}", flush=True)


def estimate_duration(run: TrainingRun, step: int) -> Optional[duration.StepEstimate]:
    """The chief's line estimating the seconds per step and the run's duration from the model's
    FLOPs and this machine's matmul rate (not on a TPU, whose rate the host cannot measure);
    returns the estimate, or None."""
    o, place = run.options, run.place
    if not place.is_chief or isinstance(run.strategy, tf.distribute.TPUStrategy):
        return None
    rate = measure_matmul_rate(COMPUTE_DTYPES[o.precision],
                               strategy_devices(run.strategy)[0]).flops_per_second
    estimate = duration.estimate_step(run.config, place.per_replica // o.grad_accum_steps,
                                      place.global_batch, place.replicas, rate)
    print(duration.estimate_line(estimate, o.train_steps - step, o.target_hardware),
          flush=True)
    return estimate
