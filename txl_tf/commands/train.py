"""`train`: one training run of txl-tf, assembled from the parts in `txl_tf/training/`.

  1. placement (`training/placement.py`): the strategy (`auto`: `distribute.resolve_auto`),
     this worker's place and the batch per replica (global batch / replicas);
  2. `_build_data`: the data source finds (or makes) the train/valid records of that layout;
     the model configuration follows its vocabulary; gradient accumulation is raised when a
     replica's streams do not fit (`placement.fit_batch`);
  3. the run record (`training/run_record/`): the run checked against model_dir's record,
     then config.json, the data's vocabulary and corpus description, flags.txt written;
  4. `_build_trainer`: model, optimizer, `Trainer` and `TrainCheckpoints` under
     `strategy.scope()`;
  5. the start (`run_record/start.py`): the newest checkpoint of `model_dir` (weights,
     optimizer, step, dropout RNG, this worker's memory), or a warm start from
     `init_checkpoint`, or a fresh start;
  6. `_build_controller`: the outer loop (`training/controller.py`) with its actions
     (`training/actions/`, built by `actions.factory.build_actions`);
  7. reporting (`training/reporting/`): the opening lines, then train_summary.json.
"""
import time
from typing import Optional

import keras
import tensorflow as tf

from txl_tf.storage import model_files
from txl_tf.commands.train_options import TrainError, TrainOptions, checked, for_level
from txl_tf.model.config_template import ConfigTemplate
from txl_tf.model.memory_estimate import check_step_fits
from txl_tf.model.transformer_xl import TransformerXL
from txl_tf.training import checkpoints as checkpoints_lib
from txl_tf.training import placement
from txl_tf.devices import step_compilation
from txl_tf.training.actions.factory import build_actions
from txl_tf.training.controller import Controller
from txl_tf.training.data_source import DataSource
from txl_tf.training.measurement.device_memory import reset_peaks
from txl_tf.training.reporting.heartbeat import Heartbeat
from txl_tf.training.reporting.hparams_session import HParamsSession
from txl_tf.training.interruption import StopOnSignal, TrainingInterrupted
from txl_tf.training.lora_run import add_adapters
from txl_tf.training.lr_schedule import WarmupCosineSchedule
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training import announce, train_summary as reporting
from txl_tf.training.run_record.record import write_record
from txl_tf.training.run_record.start import starting_point
from txl_tf.devices.step_compilation import strategy_devices
from txl_tf.training.reporting.tensorboard import RunSummaries
from txl_tf.training.trainer import Trainer
from txl_tf.training.step_settings import StepSettings
from txl_tf.training.training_run import TrainingRun
from untrusted_files import dir_kinds

def _build_schedule(o: TrainOptions) -> WarmupCosineSchedule:
    try:
        return WarmupCosineSchedule(o.learning_rate, o.warmup_steps, o.train_steps,
                                    o.min_lr_ratio)
    except ValueError as error:
        raise TrainError(f"learning-rate schedule flags: {error}") from None


def _build_data(o: TrainOptions, template: ConfigTemplate, data: DataSource,
                place: placement.Placement):
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


def _build_trainer(run: TrainingRun, schedule) -> None:
    """Model, optimizer, `Trainer` (its step compiled as `--jit_compile` chooses, kept in
    `run.compilation`) and `TrainCheckpoints` of `run`."""
    o = run.options
    with run.strategy.scope():
        run.model = TransformerXL(run.config)
        add_adapters(run.model, o.model_dir, o.lora_rank, run.place.is_chief)
        optimizer = make_optimizer(schedule)
    run.compilation = step_compilation.choose(o.jit_compile, run.strategy, o.precision)
    step = StepSettings(clip=o.clip, half_loss=o.half_loss,
                        loss_scaling=o.precision == "mixed_float16",
                        grad_accum_steps=o.grad_accum_steps,
                        jit_compile=run.compilation.mode is not None)
    run.trainer = trainer = Trainer(run.model, optimizer, run.strategy, step)
    trackables = dict(model=run.model, optimizer=optimizer, step=trainer.step,
                      loss_scale=trainer.loss_scale, good_steps=trainer.good_steps,
                      dropout_rng=checkpoints_lib.dropout_rng_state(run.model))
    run.checkpoints = checkpoints_lib.TrainCheckpoints(
        o.model_dir, trackables, max_to_keep=o.keep_checkpoints, worker=run.place.worker,
        is_chief=run.place.is_chief)


def _build_controller(run: TrainingRun, summaries: RunSummaries, step: int, mems,
                      valid_baseline: Optional[float] = None) -> Controller:
    """The outer loop over the training records from `step` on, with the run's actions (kept
    in `run.actions`; the valid lines show `valid_baseline`)."""
    o, place, strategy = run.options, run.place, run.strategy
    heartbeat = Heartbeat(o.log_seconds, o.train_steps,
                          echo=(lambda line: print(line, flush=True)) if place.is_chief else None)
    run.actions = build_actions(run, summaries, heartbeat, step, valid_baseline)
    train_fn = run.data.input_fn("train", run.layouts["train"], repeat=True, start_step=step)
    iterator = iter(strategy.distribute_datasets_from_function(train_fn))
    return Controller(run.trainer, iterator, mems, step, o.steps_per_loop,
                      list(run.actions.values()), heartbeat=heartbeat)


def _save_and_stop(run: TrainingRun, controller: Controller, signal_name: str) -> None:
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
      level's unit (`txl_tf/loss/loss_report.py`), `verdict` (the line saying the model did not
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
    dir_kinds.check_kind(o.model_dir, dir_kinds.MODEL, f"model_dir {o.model_dir}", TrainError)
    _build_schedule(for_level(o, None))  # the schedule flags are checked before any data
    keras.config.set_dtype_policy(o.precision)
    keras.utils.set_random_seed(o.seed)
    strategy = strategy or placement.build_strategy(o)
    place = placement.build_placement(o, strategy)
    layouts, config = _build_data(o, template, data, place)
    o, memory_estimate = placement.fit_batch(for_level(o, data.level), config, place, strategy)
    schedule = _build_schedule(o)
    run = TrainingRun(o, strategy, place, data, layouts, config, memory_estimate=memory_estimate)
    write_record(run)
    _build_trainer(run, schedule)
    step, memory = run.checkpoints.restore()
    resumed = step is not None
    if resumed and step >= o.train_steps:
        return reporting.already_trained(o, step)
    step, mems = starting_point(run, step, memory)
    summaries = RunSummaries(o.model_dir, data.level, enabled=place.is_chief)
    run.hparams = HParamsSession(o.model_dir, data.level, enabled=place.is_chief)
    baselines = {split: data.unigram_entropy(split) for split in ("train", "valid")}
    controller = _build_controller(run, summaries, step, mems, baselines["valid"])
    announce.announce(run, summaries, step, resumed, baselines, name)
    end_step = o.train_steps if stop_after_steps is None else min(o.train_steps,
                                                                  stop_after_steps)
    # A signal stops a single-process run after the current loop, with a checkpoint there
    # (one during the duration estimate: after the first loop).
    with StopOnSignal(enabled=place.num_workers == 1) as stop:
        run.step_estimate = announce.estimate_duration(run, step)
        controller.heartbeat.pace.estimate = (run.step_estimate.seconds if run.step_estimate
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
    summary = reporting.run_summary(run, controller, resumed, baselines, time.time() - start_time)
    reporting.finish(run, summary)
    return summary
