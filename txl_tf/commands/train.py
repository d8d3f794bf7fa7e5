"""`train`: one training run of txl-tf, built step by step.

  1. `_build_strategy`, `_build_placement`: the strategy (`auto`: see
     `txl_tf/training/distribute.py: resolve_auto`), this worker's place and the batch per
     replica (global batch / replicas);
  2. `_build_data`: the data source finds (or makes) the train/valid records of that layout;
     the model configuration follows its vocabulary; gradient accumulation is raised when a
     replica's streams do not fit (`txl_tf/training/batch_fit.py`);
  3. `_write_model_dir`: config.json, the data's vocabulary and corpus description, flags.txt;
  4. `_build_trainer`: model, optimizer, `Trainer` and `TrainCheckpoints` under
     `strategy.scope()`;
  5. `_resume`: the newest checkpoint of `model_dir` (weights, optimizer, step, dropout RNG, this
     worker's memory), or a warm start from `init_checkpoint`, or a fresh start;
  6. `_build_controller`: the outer loop (`txl_tf/training/controller.py`) with its actions
     (`txl_tf/training/actions.py`): log, evaluate, save, keep best;
  7. `_finish`: train_summary.json.
"""
import dataclasses
import json
import os
import time
from typing import Optional

import keras
import tensorflow as tf
from absl import logging

import txl_tf
from txl_tf.commands.train_options import TrainError, TrainOptions, checked, for_level
from txl_tf.config import ConfigError, check_against_saved
from txl_tf.config_template import ConfigTemplate
from txl_tf.loss_report import (CorpusFacts, corpus_verdict, format_value, loss_fields,
                                 verdict)
from txl_tf import model_files
from txl_tf.atomic_writes import write_json_atomic, write_text_atomic
from txl_tf.checkpoint_probes import checkpoint_problem
from txl_tf.memory_estimate import check_step_fits
from txl_tf.training import actions as actions_lib
from txl_tf.training import batch_fit
from txl_tf.training import checkpoints as checkpoints_lib
from txl_tf.training.checkpoints.worker_memory import gather_worker_memory
from txl_tf.training import distribute
from txl_tf.commands import resume_check
from txl_tf.training.controller import Controller
from txl_tf.training.data_source import DataSource
from txl_tf.training.device_memory import peak_memory, reset_peaks
from txl_tf.training import duration
from txl_tf.training.heartbeat import Heartbeat
from txl_tf.training.hparams_session import HParamsSession, run_hparams
from txl_tf.training.interruption import StopOnSignal, TrainingInterrupted
from txl_tf.training.lr_schedule import (WarmupCosineSchedule, schedule_change_notice,
                                         warmup_cosine_lr)
from txl_tf.training.matmul_rate import measure_matmul_rate
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.profiling import ProfileSteps
from txl_tf.training import step_compilation
from txl_tf.training.step_compilation import strategy_devices
from txl_tf.training.summaries import RunSummaries, format_duration
from txl_tf.training.trainer import Trainer
from txl_tf.commands.warm_start import checkpoint_prefix, warm_start

SUMMARY_FILE = "train_summary.json"


@dataclasses.dataclass
class Placement:
    """Where this process runs and how the batch is split.

    Attributes:
      worker, num_workers, is_chief: this worker's index, the workers, whether it writes.
      replicas: replicas in sync (all workers).
      hosts, local: input hosts (a TPU pod slice: one client, several hosts) and replicas per
        host.
      global_batch, per_replica, valid_per_replica: training streams in all, per replica, and
        validation streams per replica.
    """
    worker: int
    num_workers: int
    is_chief: bool
    replicas: int
    hosts: int
    local: int
    global_batch: int
    per_replica: int
    valid_per_replica: int


@dataclasses.dataclass
class _Run:
    """What the steps of `train` build, handed from step to step."""
    options: TrainOptions
    strategy: tf.distribute.Strategy
    place: Placement
    data: DataSource
    layouts: dict
    config: txl_tf.TransformerXLConfig
    model: Optional[txl_tf.TransformerXL] = None
    trainer: Optional[Trainer] = None
    compilation: Optional[step_compilation.Choice] = None  # how the trainer's step is compiled
    checkpoints: Optional[checkpoints_lib.TrainCheckpoints] = None
    # by name: throughput, log, duration, evaluation, save, best, hparams
    actions: Optional[dict] = None
    hparams: Optional[HParamsSession] = None
    memory_estimate: Optional[dict] = None  # the accumulation chooser's (batch_fit)
    step_estimate: Optional[duration.StepEstimate] = None  # before the first step (chief)


def _build_schedule(o: TrainOptions) -> WarmupCosineSchedule:
    try:
        return WarmupCosineSchedule(o.learning_rate, o.warmup_steps, o.train_steps,
                                    o.min_lr_ratio)
    except ValueError as error:
        raise TrainError(f"learning-rate schedule flags: {error}") from None


def _schedule_flags(o: TrainOptions) -> dict:
    return dict(learning_rate=o.learning_rate, warmup_steps=o.warmup_steps,
                train_steps=o.train_steps, min_lr_ratio=o.min_lr_ratio)


def _build_strategy(o: TrainOptions) -> tf.distribute.Strategy:
    """The strategy of `o.strategy`; for `auto` (the recipes' setting) one line says what was
    chosen and why."""
    if o.strategy != "auto":
        return distribute.create_strategy(o.strategy, tpu=o.tpu, devices=o.devices,
                                          tpu_timeout=o.tpu_timeout)
    choice = distribute.resolve_auto(o.tpu, o.devices)
    print(f"strategy: {choice.name} ({choice.reason}; --strategy=auto, give --strategy to "
          "force one)", flush=True)
    return distribute.create_strategy(choice.name, tpu=choice.tpu, devices=o.devices,
                                      tpu_timeout=o.tpu_timeout)


def _build_placement(o: TrainOptions, strategy: tf.distribute.Strategy) -> Placement:
    """This worker's `Placement`; raises `TrainError` for a batch the replicas cannot share."""
    worker, num_workers, is_chief = distribute.worker_info(strategy)
    replicas = strategy.num_replicas_in_sync
    hosts, local = distribute.input_hosts(strategy)
    global_batch = o.train_batch_size or o.per_host_train_bsz * hosts
    if global_batch % replicas:
        raise TrainError(
            f"the global batch ({global_batch}) is not divisible by the {replicas} replicas of "
            f"--strategy={o.strategy}; choose a batch that is a multiple of {replicas}.")
    per_replica = global_batch // replicas
    if per_replica % o.grad_accum_steps:
        raise TrainError(
            f"--grad_accum_steps={o.grad_accum_steps} must divide the per-replica batch "
            f"({per_replica} = {global_batch} / {replicas} replicas).")
    valid_per_replica = (o.per_host_valid_bsz * hosts // replicas
                         if o.per_host_valid_bsz else per_replica)
    if valid_per_replica < 1:
        raise TrainError(f"--per_host_valid_bsz={o.per_host_valid_bsz} leaves no stream per "
                         f"replica ({replicas} replicas).")
    return Placement(worker, num_workers, is_chief, replicas, hosts, local, global_batch,
                     per_replica, valid_per_replica)


def _build_data(o: TrainOptions, template: ConfigTemplate, data: DataSource,
                place: Placement):
    """(layouts, config): the records of this run's layout found or made (non-chief workers
    wait up to 30 minutes for the chief's), and the model configuration of their vocabulary;
    a model whose one stream cannot fit this machine is refused before any record is made."""
    bytes_per_value = 2 if o.precision.startswith("mixed") else 4
    check_step_fits(template.config, 1, training=True, bytes_per_value=bytes_per_value)
    tgt_len = template.tgt_len
    layouts = {"train": data.layout(tgt_len, place.per_replica, place.local, place.hosts,
                                    num_passes=o.num_passes),
               "valid": data.layout(tgt_len, place.valid_per_replica, place.local,
                                    place.hosts)}
    data.ensure_records(layouts, may_prepare=place.is_chief,
                        wait_seconds=0 if place.is_chief else 1800)
    return layouts, template.for_data(data.vocab_size, tuple(data.cutoffs))


def _fit_batch(o: TrainOptions, config, place: Placement, strategy):
    """(`o` with the `grad_accum_steps` that makes each replica's chunk fit, the memory
    estimate behind the choice); one line when it had to be raised."""
    fit = batch_fit.fit_per_replica_batch(config, place.per_replica, o.grad_accum_steps,
                                          o.max_per_replica_batch, strategy, place.local)
    if fit.reason and place.is_chief:
        print(fit.reason, flush=True)
    return dataclasses.replace(o, grad_accum_steps=fit.grad_accum_steps), fit.estimate


def _check_init_checkpoint(path: str, config) -> None:
    """A `TrainError` for an --init_checkpoint that is missing, of another configuration or
    damaged, before anything is written."""
    checkpoint = checkpoint_prefix(path, config)
    directory = os.path.dirname(checkpoint)
    if os.path.isfile(os.path.join(directory, model_files.CONFIG_FILE)):
        try:
            check_against_saved(config, txl_tf.load_config(directory), "its config.json")
        except ConfigError as error:
            raise TrainError(f"--init_checkpoint={path}: the checkpoint {checkpoint} does not "
                             f"fit a model of this configuration ({' '.join(str(error).split())})"
                             ) from None
    problem = checkpoint_problem(checkpoint)
    if problem:
        raise TrainError(f"--init_checkpoint={path}: the checkpoint {checkpoint} cannot be "
                         f"read: {problem}; give an intact checkpoint.")


def _check_against_record(run: _Run) -> Optional[int]:
    """The step a resumed run starts from (None: a new run), after checking this run's settings
    against model_dir's record (`resume_check`): a changed shape or --tgt_len is refused, a
    changed training setting noted in one line each, before anything is written."""
    o = run.options
    config_path = os.path.join(o.model_dir, model_files.CONFIG_FILE)
    latest = (model_files.latest_checkpoint(o.model_dir)
              if os.path.exists(config_path) else None)
    if latest is None and o.init_checkpoint:  # a new run: its warm start is checked first
        _check_init_checkpoint(o.init_checkpoint, run.config)
    if not os.path.exists(config_path):
        return None
    saved = txl_tf.load_config(o.model_dir)
    if latest is None:
        check_against_saved(run.config, saved, config_path)
        return None
    step = int(latest.rsplit("-", 1)[1])
    resume_check.check_data(o.model_dir, run.data.data_dir)
    for line in resume_check.resume_notes(o, run.config, saved, config_path, step):
        if run.place.is_chief:
            print(line, flush=True)
    return step


def _write_model_dir(run: _Run) -> None:
    """Check the run against model_dir's record; the chief writes config.json, the data's
    files and flags.txt (this start appended to the run's history)."""
    o = run.options
    resumed_at = _check_against_record(run)
    os.makedirs(o.model_dir, exist_ok=True)
    if run.place.is_chief:
        txl_tf.save_config(run.config, o.model_dir)
        run.data.copy_to(o.model_dir)
        if o.flags_text:
            write_text_atomic(os.path.join(o.model_dir, resume_check.FLAGS_FILE),
                              resume_check.flags_history(o.model_dir, o.flags_text, resumed_at))


def _build_trainer(run: _Run, schedule) -> None:
    """Model, optimizer, `Trainer` (its step compiled as `--jit_compile` chooses, kept in
    `run.compilation`) and `TrainCheckpoints` of `run`."""
    o = run.options
    with run.strategy.scope():
        run.model = txl_tf.TransformerXL(run.config)
        optimizer = make_optimizer(schedule)
    run.compilation = compilation = step_compilation.choose(o.jit_compile, run.strategy,
                                                       o.precision)
    run.trainer = trainer = Trainer(run.model, optimizer, run.strategy, clip=o.clip,
                                    grad_accum_steps=o.grad_accum_steps,
                                    loss_scaling=o.precision == "mixed_float16",
                                    half_loss=o.half_loss,
                                    jit_compile=compilation.mode is not None)
    trackables = dict(model=run.model, optimizer=optimizer, step=trainer.step,
                      loss_scale=trainer.loss_scale, good_steps=trainer.good_steps,
                      dropout_rng=checkpoints_lib.dropout_rng_state(run.model))
    run.checkpoints = checkpoints_lib.TrainCheckpoints(
        o.model_dir, trackables, max_to_keep=o.keep_checkpoints, worker=run.place.worker,
        is_chief=run.place.is_chief)


def _read_json(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _resume(run: _Run, step: Optional[int], memory) -> tuple:
    """(step, per-replica memory) to start from after `TrainCheckpoints.restore` gave
    (`step`, `memory`): the restored ones, or step 0 (warm-started from `init_checkpoint`) and
    zeros. The chief records this run's schedule (model_dir/schedule.json)."""
    o, ckpts = run.options, run.checkpoints
    schedule_path = os.path.join(o.model_dir, checkpoints_lib.SCHEDULE_FILE)
    if step is not None:
        logging.info("resumed from %s at step %d (memory %s)", ckpts.restored_path, step,
                     "restored" if memory is not None else "reset to zeros")
        notice = schedule_change_notice(_read_json(schedule_path), _schedule_flags(o), step)
        if notice and run.place.is_chief:
            print(notice, flush=True)
    else:
        step = 0
        if o.init_checkpoint:
            logging.info("warm start from %s",
                         warm_start(run.model, o.init_checkpoint, run.config))
    mismatch = resume_check.memory_fits(memory, run.place.per_replica * run.place.local,
                                        run.config.mem_len)
    if mismatch:
        if run.place.is_chief:
            print(mismatch, flush=True)
        memory = None
    mems = (run.trainer.memory_from_host(memory) if memory is not None
            else run.trainer.init_memory(run.place.per_replica))
    if run.place.is_chief:
        write_json_atomic(schedule_path, _schedule_flags(o))
    return step, mems


def _already_trained(o: TrainOptions, step: int) -> dict:
    print(f"{o.model_dir} is already trained to step {step} (--train_steps={o.train_steps}); "
          "nothing to do. Raise --train_steps to train on.", flush=True)
    summary = _read_json(os.path.join(o.model_dir, SUMMARY_FILE))
    if summary is not None:
        return summary
    return {"model_dir": os.path.abspath(o.model_dir), "step": step, "resumed": True}


def _announce(run: _Run, summaries: RunSummaries, step: int, resumed: bool,
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


def _build_controller(run: _Run, summaries: RunSummaries, step: int, mems,
                      valid_baseline: Optional[float] = None) -> Controller:
    """The outer loop over the training records from `step` on, with its actions (the valid
    lines show `valid_baseline`, the valid split's unigram entropy)."""
    o, place, strategy, trainer = run.options, run.place, run.strategy, run.trainer
    train_fn = run.data.input_fn("train", run.layouts["train"], repeat=True, start_step=step)
    valid_fn = run.data.input_fn("valid", run.layouts["valid"], repeat=False)

    def evaluate():
        iterator = iter(strategy.distribute_datasets_from_function(valid_fn))
        return trainer.evaluate(iterator, place.valid_per_replica, o.max_eval_batches)

    def memories(mems):  # [] -> a resumed run restarts from zeros
        if not o.checkpoint_memory:
            return []
        return gather_worker_memory(strategy, mems, place.num_workers,
                                                    trainer.memory_to_host(mems))

    heartbeat = Heartbeat(o.log_seconds, o.train_steps,
                          echo=(lambda line: print(line, flush=True)) if place.is_chief else None)
    log = actions_lib.LogProgress(
        summaries, o.log_steps, o.train_steps, echo=place.is_chief, heartbeat=heartbeat,
        learning_rate=lambda i: warmup_cosine_lr(i, **_schedule_flags(o)))
    evaluation = actions_lib.Evaluate(evaluate, summaries, o.eval_steps, o.train_steps,
                                      echo=place.is_chief, baseline=valid_baseline)
    save = actions_lib.SaveCheckpoint(run.checkpoints, o.save_steps, o.train_steps, memories)
    best = actions_lib.KeepBest(run.checkpoints.best, run.data.level, run.data.copy_to)
    measured = actions_lib.MeasuredDuration(heartbeat.pace, o.train_steps, echo=place.is_chief)
    run.actions = dict(throughput=actions_lib.Throughput(), log=log, duration=measured,
                       evaluation=evaluation, save=save, best=best,
                       hparams=actions_lib.HParamsMetrics(run.hparams, log, evaluation))
    if o.profile_steps and place.is_chief:  # first: it stops before the others act
        run.actions = dict(profile=ProfileSteps(o.model_dir, *o.profile_steps), **run.actions)
        run.actions["profile"].begin(step)
    iterator = iter(strategy.distribute_datasets_from_function(train_fn))
    return Controller(trainer, iterator, mems, step, o.steps_per_loop,
                      list(run.actions.values()), heartbeat=heartbeat)


_COMPUTE_DTYPES = {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16,
                   "mixed_float16": tf.float16}


def _estimate_duration(run: _Run, step: int) -> Optional[duration.StepEstimate]:
    """The chief's line estimating the seconds per step and the run's duration from the model's
    FLOPs and this machine's matmul rate (not on a TPU, whose rate the host cannot measure);
    returns the estimate, or None."""
    o, place = run.options, run.place
    if not place.is_chief or isinstance(run.strategy, tf.distribute.TPUStrategy):
        return None
    rate = measure_matmul_rate(_COMPUTE_DTYPES[o.precision],
                               strategy_devices(run.strategy)[0]).flops_per_second
    estimate = duration.estimate_step(run.config, place.per_replica // o.grad_accum_steps,
                                      place.global_batch, place.replicas, rate)
    print(duration.estimate_line(estimate, o.train_steps - step, o.target_hardware),
          flush=True)
    return estimate


def _summary(run: _Run, controller: Controller, resumed: bool, baselines: dict,
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
        "verdict": _verdict(log.last_loss, evaluation.last_loss, baselines, level,
                            CorpusFacts.from_info(run.data.info)),
        **throughput.summary(),
        **_pace_fields(controller.heartbeat.pace, run.step_estimate),
        "device_memory": dict(peak_memory(strategy_devices(run.strategy)),
                              estimate=run.memory_estimate),
        "wall_seconds": wall_seconds,
        "resumed": resumed,
    }


def _pace_fields(pace, estimate: Optional[duration.StepEstimate]) -> dict:
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


def _verdict(train_loss, valid_loss, baselines: dict, level: str,
             facts: Optional[CorpusFacts] = None) -> Optional[str]:
    """The line saying the corpus is too small for word level (`facts`), or that the model does
    not beat counting (valid loss checked first), or None."""
    return (corpus_verdict(valid_loss, baselines["valid"], facts, "valid")
            or verdict(valid_loss, baselines["valid"], level, "valid", facts)
            or verdict(train_loss, baselines["train"], level, "training"))


def _save_and_stop(run: _Run, controller: Controller, signal_name: str) -> None:
    """Saves a checkpoint at the step reached (unless one was just saved there) and raises
    `TrainingInterrupted` with the line saying how to resume."""
    o, save = run.options, run.actions["save"]
    latest = model_files.latest_checkpoint(o.model_dir)
    if latest is None or int(latest.rsplit("-", 1)[1]) != controller.step:
        save.checkpoints.save(controller.step, save.memories(controller.mems))
    raise TrainingInterrupted(
        f"interrupted ({signal_name}) at step {controller.step} of {o.train_steps}; a "
        f"checkpoint of step {controller.step} is saved in {o.model_dir}: run the same "
        "command to resume from it.")


def _finish(run: _Run, summary: dict) -> None:
    """After every worker is done (no worker takes the coordination service down before the
    others' last step and checkpoint), the chief writes train_summary.json."""
    o, strategy = run.options, run.strategy
    if run.place.num_workers > 1:
        strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)),
                        axis=None)
    if run.place.is_chief:
        write_json_atomic(os.path.join(o.model_dir, SUMMARY_FILE), summary)
        print("train_summary " + json.dumps(summary, sort_keys=True), flush=True)
        print(f"wall time {format_duration(summary['wall_seconds'])}; model in {o.model_dir}; "
              f"TensorBoard: tensorboard --logdir {o.model_dir}", flush=True)
        if summary["verdict"]:
            print(summary["verdict"], flush=True)


def train(options: TrainOptions,
          template: ConfigTemplate,
          data: DataSource,
          strategy: Optional[tf.distribute.Strategy] = None,
          stop_after_steps: Optional[int] = None,
          name: Optional[str] = None) -> dict:
    """Train (or resume training) and return the summary (also model_dir/train_summary.json).

    Args:
      options: the run's `TrainOptions`.
      template: the model configuration without its vocabulary (`ConfigTemplate`: n_token
        and the cutoffs come from `data`).
      data: the prepared data (`txl_tf/training/data_source.py`; `tf_records.PreparedData`).
      strategy: an existing strategy (tests); default: created from `options.strategy`.
      stop_after_steps: stop once this global step is reached, without a final save, as if the
        process were killed there (tests of resumption); None: train to `train_steps`.
      name: the run's name in its first console line (the ablation: the variant).

    Returns:
      The summary dict: step, losses (train, valid, unigram baselines) in nats and in the
      level's unit (`txl_tf/loss_report.py`), `verdict` (the line saying the model did not
      beat its unigram baseline, or None), tokens_per_sec, wall_seconds, resumed, the run's
      shape.

    Raises:
      TrainError, ConfigError: inconsistent options (one line naming the fix).
      CheckpointIOError: model_dir's checkpoints cannot be read or written.
      DivergedError: the training loss became non-finite (a `FloatingPointError`).
      TrainingInterrupted: SIGINT (Ctrl-C) or SIGTERM stopped a single-process run; a
        checkpoint of the step reached was saved first (a second signal exits at once).
    """
    start_time = time.time()
    o = checked(options)
    _build_schedule(for_level(o, None))  # the schedule flags are checked before any data
    keras.config.set_dtype_policy(o.precision)
    keras.utils.set_random_seed(o.seed)
    strategy = strategy or _build_strategy(o)
    place = _build_placement(o, strategy)
    layouts, config = _build_data(o, template, data, place)
    o, memory_estimate = _fit_batch(for_level(o, data.level), config, place, strategy)
    schedule = _build_schedule(o)
    run = _Run(o, strategy, place, data, layouts, config, memory_estimate=memory_estimate)
    _write_model_dir(run)
    _build_trainer(run, schedule)
    step, memory = run.checkpoints.restore()
    resumed = step is not None
    if resumed and step >= o.train_steps:
        return _already_trained(o, step)
    step, mems = _resume(run, step, memory)
    summaries = RunSummaries(o.model_dir, data.level, enabled=place.is_chief)
    run.hparams = HParamsSession(o.model_dir, data.level, enabled=place.is_chief)
    baselines = {split: data.unigram_entropy(split) for split in ("train", "valid")}
    controller = _build_controller(run, summaries, step, mems, baselines["valid"])
    _announce(run, summaries, step, resumed, baselines, name)
    end_step = o.train_steps if stop_after_steps is None else min(o.train_steps,
                                                                  stop_after_steps)
    # A signal stops a single-process run after the current loop, with a checkpoint there
    # (one during the duration estimate: after the first loop).
    with StopOnSignal(enabled=place.num_workers == 1) as stop:
        run.step_estimate = _estimate_duration(run, step)
        controller.heartbeat.estimate = (run.step_estimate.seconds if run.step_estimate
                                         else None)
        reset_peaks(strategy_devices(strategy))  # the run's own peak, not the matmul rate's
        controller.should_stop = lambda: stop.requested is not None
        try:
            controller.run(end_step)
        finally:
            if "profile" in run.actions:
                run.actions["profile"].close()
        if stop.requested and controller.step < end_step:
            _save_and_stop(run, controller, stop.requested)
    summary = _summary(run, controller, resumed, baselines, time.time() - start_time)
    _finish(run, summary)
    return summary
