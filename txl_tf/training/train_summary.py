"""The closing of a training run: `run_summary` (train_summary.json's dict, with `verdict` and
`pace_fields`), `finish` (written and printed once every worker is done) and `already_trained`
(a run whose model_dir holds its last step)."""
import json
import os
from typing import Optional

import tensorflow as tf

from txl_tf.storage.atomic_writes import write_json_atomic
from txl_tf.loss.loss_report import CorpusFacts, corpus_verdict, loss_fields, verdict
from txl_tf.training.measurement import duration
from txl_tf.training.controller import Controller
from txl_tf.training.measurement.device_memory import peak_memory
from txl_tf.devices.step_compilation import strategy_devices
from txl_tf.training.reporting.tensorboard import format_duration
from txl_tf.training.training_run import TrainingRun
from txl_tf.storage.model_dir_layout import TRAIN_SUMMARY_FILE
from untrusted_files import reading


def run_summary(run: TrainingRun, controller: Controller, resumed: bool, baselines: dict,
                wall_seconds: float) -> dict:
    """The summary of a run (train_summary.json); `baselines`: {split: unigram entropy}."""
    o, place, config, level = run.options, run.place, run.config, run.data.level
    throughput, log, evaluation = (run.actions[k] for k in ("throughput", "log", "evaluation"))
    unigram = loss_fields(baselines["train"], level, "unigram_")
    return {
        "model_dir": os.path.abspath(o.model_dir), "dataset": run.data.dataset, "level": level,
        "step": controller.step, "train_steps": o.train_steps, "replicas": place.replicas,
        "global_batch": place.global_batch, "tgt_len": config.tgt_len,
        "mem_len": config.mem_len, "parameters": int(run.model.count_params()),
        **loss_fields(log.last_loss, level, "train_"),
        **loss_fields(evaluation.last_loss, level, "valid_"),
        "unigram_entropy_nats": unigram.pop("unigram_loss"), **unigram,
        "valid_unigram_entropy_nats": baselines["valid"],
        "verdict": run_verdict(log.last_loss, evaluation.last_loss, baselines, level,
                               CorpusFacts.from_info(run.data.info)),
        **throughput.summary(),
        **pace_fields(controller.heartbeat.pace, run.step_estimate),
        "device_memory": dict(peak_memory(strategy_devices(run.strategy)),
                              estimate=run.memory_estimate),
        "wall_seconds": wall_seconds,
        "resumed": resumed,
    }


def pace_fields(pace, estimate: Optional[duration.StepEstimate]) -> dict:
    """The summary's seconds per step: measured (`seconds_per_step_source` says over which
    steps, and whether compilation is included), the estimate from the FLOPs, the first
    loop's tracing and compilation (None until a later loop was measured), and the model FLOPs
    utilisation of the measured step against the matmul rate measured before the first step
    (per device: FLOPs / (seconds x rate x replicas); None without an estimate)."""
    measured = pace.measured_seconds_per_step()
    mfu = (estimate.flops / (measured * estimate.rate * estimate.replicas)
           if estimate and measured else None)
    return {"seconds_per_step": measured,
            "seconds_per_step_source": pace.source(),
            "estimated_seconds_per_step": pace.estimate,
            "compile_seconds": pace.compile_seconds(),
            "train_flops_per_step": estimate.flops if estimate else None,
            "matmul_peak_flops": estimate.rate if estimate else None,
            "mfu": mfu}


def run_verdict(train_loss, valid_loss, baselines: dict, level: str,
                facts: Optional[CorpusFacts] = None) -> Optional[str]:
    """The line saying the corpus is too small for word level (`facts`), or that the model does
    not beat counting (valid loss checked first), or None."""
    return (corpus_verdict(valid_loss, baselines["valid"], facts, "valid")
            or verdict(valid_loss, baselines["valid"], level, "valid", facts)
            or verdict(train_loss, baselines["train"], level, "training"))


def finish(run: TrainingRun, summary: dict) -> None:
    """After every worker is done (no worker takes the coordination service down before the
    others' last step and checkpoint), the chief writes train_summary.json and prints it."""
    o, strategy = run.options, run.strategy
    if run.place.num_workers > 1:
        strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)),
                        axis=None)
    if run.place.is_chief:
        write_json_atomic(os.path.join(o.model_dir, TRAIN_SUMMARY_FILE), summary)
        print("train_summary " + json.dumps(summary, sort_keys=True), flush=True)
        print(f"wall time {format_duration(summary['wall_seconds'])}; model in {o.model_dir}; "
              f"TensorBoard: tensorboard --logdir {o.model_dir}", flush=True)
        if summary["verdict"]:
            print(summary["verdict"], flush=True)


def already_trained(o, step: int) -> dict:
    """The line and summary of a run (`o`: its `TrainOptions`) whose model_dir is trained to
    `step` >= --train_steps: its train_summary.json, or the little known without one."""
    print(f"{o.model_dir} is already trained to step {step} (--train_steps={o.train_steps}); "
          "nothing to do. Raise --train_steps to train on.", flush=True)
    summary = reading.read_json_or_none(os.path.join(o.model_dir, TRAIN_SUMMARY_FILE))
    if summary is not None:
        return summary
    return {"model_dir": os.path.abspath(o.model_dir), "step": step, "resumed": True}
