"""One training run of txl-tf: data, model, resume, the loop, evaluation, checkpoints, logs.

`run_training(options, config_fn)` is what `runners/train.py` calls after parsing its flags; tests
call it directly. The run:
  1. creates the strategy (`auto`: see `txl_tf/training/distribute.py: resolve_auto`) and derives the
     layout (per-replica batch = global batch / replicas);
  2. finds the train/valid records for that layout with the dataset and corpus options that
     data_dir/corpus-info.json records (given options override them), and makes missing ones
     (from the token cache, the raw data, or the corpus downloaded on first use by the chief);
     raises gradient accumulation when a replica's streams do not fit (`txl_tf/training/batch_fit.py`);
  3. builds the model and optimizer under `strategy.scope()`, writes config.json, vocab.txt,
     corpus-info.json and flags.txt into `model_dir`;
  4. resumes from the newest checkpoint of `model_dir` (weights, optimizer, step, dropout RNG,
     and this worker's memory), or warm-starts from `init_checkpoint`, or starts fresh;
  5. trains in compiled loops of up to `steps_per_loop` steps that stop at every log / eval /
     save boundary, carrying the memory across loops, evaluations and checkpoints;
  6. writes train_summary.json at the end.
"""
import dataclasses
import json
import math
import os
import shutil
import time
from typing import Callable, Optional

import numpy as np
import keras
import tensorflow as tf
from absl import logging

import tf_records
import txl_tf
from txl_tf.training import batch_fit
from txl_tf.training import checkpoints as checkpointing
from runners.cli import model_flags as flags_model
from txl_tf.training import distribute as strategy_lib
from txl_tf.training.lr_schedule import WarmupCosineSchedule, warmup_cosine_lr
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.summaries import RunSummaries, format_duration, metric_name, metric_value
from txl_tf.training.trainer import Trainer

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


class TrainError(ValueError):
    """Inconsistent training options; the message names the fix."""


@dataclasses.dataclass
class TrainOptions:
    """Everything of a run except the model configuration (see runners/train.py for help)."""
    model_dir: str = "runs/default"
    data_dir: str = "data/builtin"
    dataset: Optional[str] = "builtin"  # None: what data_dir/corpus-info.json records (builtin)
    corpus_options: dict = dataclasses.field(default_factory=dict)  # given ones; others recorded
    raw_path: Optional[str] = None
    download: bool = True              # the chief downloads a missing corpus archive
    per_host_train_bsz: int = 16
    train_batch_size: int = 0          # global; 0 = per_host_train_bsz * hosts
    per_host_valid_bsz: int = 0        # 0 = per_host_train_bsz
    num_passes: int = 1                # training records: rotated copies of the stream (TPU)
    learning_rate: float = 2.5e-4
    warmup_steps: int = 0
    train_steps: int = 1000
    min_lr_ratio: float = 0.004
    clip: float = 0.25
    grad_accum_steps: int = 1
    max_per_replica_batch: int = 0     # streams a replica computes at once (0: memory estimate)
    precision: str = "float32"
    steps_per_loop: int = 50
    log_steps: int = 50
    save_steps: int = 500
    eval_steps: int = 500              # evaluate every eval_steps steps (0: only at the end)
    max_eval_batches: int = -1         # validation steps per evaluation (-1: whole split)
    keep_checkpoints: int = 5
    init_checkpoint: Optional[str] = None
    strategy: str = "default"
    tpu: Optional[str] = None
    devices: tuple = ()
    seed: int = 0
    checkpoint_memory: bool = True     # save the memory with checkpoints (exact resume)
    flags_text: str = ""               # the run's flags, stored as text


# ------------------------------------------------------------------------------------ helpers
def set_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise TrainError(f"--precision must be one of {PRECISIONS}, got {precision!r}.")
    keras.config.set_dtype_policy(precision)


def unigram_entropy(data_dir: str, split: str = "train",
                    max_tokens: int = 50_000_000) -> Optional[float]:
    """Entropy (nats/token) of the unigram distribution of `split`: the loss of the best model
    that ignores context, the baseline a language model must beat. None when unavailable or
    when the split has more than `max_tokens` tokens (not worth the start-up time)."""
    info = tf_records.read_corpus_info(data_dir) or {}
    if info.get("num_tokens", {}).get(split, 0) > max_tokens:
        return None
    try:
        tokens = tf_records.load_token_stream(data_dir, split, verify=False)
    except Exception:  # noqa: BLE001 - a baseline is optional
        return None
    counts = np.bincount(np.asarray(tokens, np.int64))
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def ensure_records(options: TrainOptions, layouts: dict, vocab_size=None,
                   may_prepare: bool = True, wait_seconds: float = 0.0) -> dict:
    """Metadata per split. Missing records are made here: from the token cache of a data_dir
    already prepared (silently), else from the raw data (the built-in and synthetic corpora,
    --raw_path, data_dir/raw, or the corpus archive downloaded with a progress bar and checked
    when `options.download`); a failed download is one line naming the URL and --raw_path.
    With `may_prepare=False` (a non-chief worker) the chief makes them: wait up to
    `wait_seconds` for them to appear in the shared data_dir. Other hosts' record files need
    not be on this machine: each host's input_fn checks its own."""
    metas, missing = {}, {}
    for split, layout in layouts.items():
        try:
            metas[split] = tf_records.find_records(options.data_dir, split, layout,
                                                   vocab_size=vocab_size, verify="none")
        except (tf_records.RecordsNotFoundError, tf_records.RecordsMismatchError) as error:
            missing[split] = error
    if not missing:
        return metas
    split, first_error = sorted(missing.items())[0]
    if not may_prepare:
        deadline = time.time() + wait_seconds
        if wait_seconds > 0:
            logging.warning("waiting up to %.0f s for the chief to write the %s records in %s",
                            wait_seconds, sorted(missing), options.data_dir)
        while missing and time.time() < deadline:
            time.sleep(1.0)
            for name in list(missing):
                try:
                    metas[name] = tf_records.find_records(options.data_dir, name, layouts[name],
                                                          vocab_size=vocab_size, verify="none")
                    del missing[name]
                except tf_records.DataError:
                    pass  # not (completely) written yet
        if missing:
            raise first_error
        return metas
    logging.info("making the %s records in %s", sorted(missing), options.data_dir)
    building = tf_records.read_corpus_info(options.data_dir) is None
    try:
        tf_records.prepare(options.dataset, options.data_dir,
                           layouts={s: layouts[s] for s in missing}, raw_path=options.raw_path,
                           download=options.download, progress=building,
                           **options.corpus_options)
    except tf_records.DownloadError:
        raise
    except tf_records.CorpusError as error:
        if options.download or options.raw_path:
            raise
        info = tf_records.read_corpus_info(options.data_dir) or {
            "dataset": options.dataset, "option_flags": []}
        splits = sorted(missing)
        same = all(layouts[s] == layouts[splits[0]] for s in splits)
        commands = ([tf_records.prepare_command(options.data_dir, ",".join(splits),
                                                layouts[splits[0]], corpus_info=info)] if same
                    else [tf_records.prepare_command(options.data_dir, s, layouts[s],
                                                     corpus_info=info) for s in splits])
        raise type(first_error)(
            f"no {'/'.join(splits)} records for this run's layout in {options.data_dir} (or "
            f"they differ from it).\nMake them with:\n  " + "\n  ".join(commands)
            + f"\n(runners/train.py could not make them itself: {error})") from None
    for split in missing:
        metas[split] = tf_records.find_records(options.data_dir, split, layouts[split],
                                               vocab_size=vocab_size, verify="none")
    return metas


def copy_data_files(data_dir: str, model_dir: str) -> None:
    """vocab.txt and corpus-info.json of `data_dir` into `model_dir`; the copy of
    corpus-info.json also records `data_dir` (absolute), where evaluate.py finds the data the
    model was trained on."""
    for name in ("vocab.txt", "corpus-info.json"):
        source = os.path.join(data_dir, name)
        if os.path.exists(source):
            tmp = os.path.join(model_dir, f".tmp-{name}")
            shutil.copyfile(source, tmp)
            os.replace(tmp, os.path.join(model_dir, name))
    info = tf_records.read_corpus_info(model_dir)
    if info is not None:
        info["data_dir"] = os.path.abspath(data_dir)
        txl_tf.model_dir.write_json_atomic(os.path.join(model_dir, "corpus-info.json"), info)


def warm_start(model, path: str, config) -> str:
    """Load model weights (not optimizer state) from a model directory or checkpoint path.

    Args:
      model: the built `TransformerXL` to fill.
      path: a txl-tf model directory (its newest checkpoint) or a checkpoint prefix
        (`<dir>/ckpt-60`; `<dir>/ckpt-60.index` is accepted too).
      config: the run's `TransformerXLConfig`, compared with the directory's config.json.

    Returns:
      The checkpoint prefix read.

    Raises:
      TrainError: one line naming the problem (missing path, no checkpoint, damaged or
        foreign files, another model configuration).
    """
    flag = f"--init_checkpoint={path}"
    checkpoint = path
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, txl_tf.model_dir.CONFIG_FILE)):
            flags_model.check_against_checkpoint_config(config, txl_tf.load_config(path), flag)
        checkpoint = txl_tf.latest_checkpoint(path)
        if checkpoint is None:
            raise TrainError(f"{flag}: no checkpoint in that directory (no ckpt-N.index); give a "
                             "trained model directory or a checkpoint prefix such as "
                             "<dir>/ckpt-60.")
    else:
        for suffix in (".index", ".data-00000-of-00001"):
            if path.endswith(suffix):
                checkpoint = path[:-len(suffix)]
        if not tf.io.gfile.exists(checkpoint + ".index"):
            what = "no such file or directory" if not os.path.exists(path) else "not a checkpoint"
            raise TrainError(f"{flag}: {what} (give a trained model directory or a checkpoint "
                             "prefix such as <dir>/ckpt-60).")
    try:
        txl_tf.restore_weights(model, checkpoint)
    except txl_tf.ModelDirError as error:
        raise TrainError(f"{flag}: {error}") from None
    return checkpoint


def create_strategy(o: TrainOptions) -> tf.distribute.Strategy:
    """The strategy of `o.strategy`; for `auto` (the recipes' setting) one line says what was
    chosen and why."""
    if o.strategy != "auto":
        return strategy_lib.create_strategy(o.strategy, tpu=o.tpu, devices=o.devices)
    choice = strategy_lib.resolve_auto(o.tpu, o.devices)
    print(f"strategy: {choice.name} ({choice.reason}; --strategy=auto, give --strategy to "
          "force one)", flush=True)
    return strategy_lib.create_strategy(choice.name, tpu=choice.tpu, devices=o.devices)


def reuse_recorded_corpus(o: TrainOptions) -> TrainOptions:
    """`o` with the dataset and corpus options of data_dir/corpus-info.json, overridden by the
    given ones (`o.dataset` None: the recorded dataset). A given dataset other than the
    recorded one is an error."""
    info = tf_records.read_corpus_info(o.data_dir) or {}
    if info.get("dataset") and o.dataset and info["dataset"] != o.dataset:
        raise TrainError(f"--data_dir={o.data_dir} holds {info['dataset']!r}, not "
                         f"--dataset={o.dataset!r}; fix one of the two.")
    dataset, options = tf_records.recorded_corpus(o.data_dir, o.dataset, o.raw_path,
                                                  o.corpus_options)
    return dataclasses.replace(o, dataset=dataset, corpus_options=options)


def fit_batch(o: TrainOptions, config, per_replica: int, strategy, local: int,
              is_chief: bool) -> TrainOptions:
    """`o` with the `grad_accum_steps` that makes each replica's chunk fit
    (`txl_tf/training/batch_fit.py`); one line when it had to be raised."""
    fit = batch_fit.fit_per_replica_batch(config, per_replica, o.grad_accum_steps,
                                          o.max_per_replica_batch, strategy, local)
    if fit.reason and is_chief:
        print(fit.reason, flush=True)
    return dataclasses.replace(o, grad_accum_steps=fit.grad_accum_steps)


def lr_schedule_notice(model_dir: str, schedule: dict, step: int) -> Optional[str]:
    """One line when a resumed run's learning-rate schedule differs from the one its
    checkpoints were trained with (model_dir/schedule.json), else None.

    Args:
      model_dir: the run directory.
      schedule: this run's learning_rate, warmup_steps, train_steps, min_lr_ratio.
      step: the step resumed from.
    """
    path = os.path.join(model_dir, checkpointing.SCHEDULE_FILE)
    try:
        with open(path) as f:
            before = json.load(f)
    except (OSError, ValueError):
        return None
    changed = [k for k in schedule if k in before and before[k] != schedule[k]]
    if not changed:
        return None
    try:
        was = warmup_cosine_lr(step, **{k: before.get(k, schedule[k]) for k in schedule})
    except (TypeError, ValueError):
        return None
    now = warmup_cosine_lr(step, **schedule)
    return ("note: resuming with " + ", ".join(f"--{k}={schedule[k]} (was {before[k]})"
                                               for k in changed)
            + f": the learning-rate schedule is recomputed over {schedule['train_steps']} steps "
            f"from step {step} on (learning rate {now:.3e} at step {step} instead of {was:.3e}).")


# ---------------------------------------------------------------------------------------- run
def run_training(options: TrainOptions,
                 config_fn: Callable[[int, tuple], txl_tf.TransformerXLConfig],
                 strategy: Optional[tf.distribute.Strategy] = None,
                 stop_after_steps: Optional[int] = None) -> dict:
    """Train (or resume training) and return the summary dict (also model_dir/train_summary.json).

    Args:
      options: run options.
      config_fn: (vocab_size, corpus_cutoffs) -> TransformerXLConfig (e.g. from the model flags).
      strategy: an existing strategy (tests); default: created from `options.strategy`.
      stop_after_steps: stop once this global step is reached, without a final save, as if the
        process were killed there (tests of resumption); None: train to `train_steps`.
    """
    o = options
    start_time = time.time()
    for name in ("steps_per_loop", "log_steps", "train_steps", "per_host_train_bsz",
                 "grad_accum_steps", "keep_checkpoints"):
        if getattr(o, name) < 1:
            raise TrainError(f"--{name} must be >= 1, got {getattr(o, name)}.")
    for name in ("save_steps", "eval_steps"):
        if getattr(o, name) < 0:
            raise TrainError(f"--{name} must be >= 0, got {getattr(o, name)}.")
    if o.warmup_steps > o.train_steps >= 1:  # a short run of a recipe: warm up all the way
        print(f"note: --warmup_steps={o.warmup_steps} is longer than --train_steps="
              f"{o.train_steps}: the learning rate warms up over all {o.train_steps} steps.",
              flush=True)
        o = dataclasses.replace(o, warmup_steps=o.train_steps)
    try:
        schedule = WarmupCosineSchedule(o.learning_rate, o.warmup_steps, o.train_steps,
                                        o.min_lr_ratio)
    except ValueError as error:
        raise TrainError(f"learning-rate schedule flags: {error}") from None
    set_precision(o.precision)
    keras.utils.set_random_seed(o.seed)
    if strategy is None:
        strategy = create_strategy(o)
    worker, num_workers, is_chief = strategy_lib.worker_info(strategy)
    replicas = strategy.num_replicas_in_sync
    # Input hosts (a TPU pod slice: one client, several hosts) and replicas per host.
    hosts, local = strategy_lib.input_hosts(strategy)

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

    # Data: the layout follows the strategy; records are found (or made) for it, with the
    # dataset and corpus options data_dir/corpus-info.json records unless others are given.
    o = reuse_recorded_corpus(o)
    probe = config_fn(1 << 30, ())  # tgt_len only; the real config needs the vocabulary
    layouts = {"train": tf_records.RecordLayout(probe.tgt_len, per_replica, local, hosts,
                                                num_passes=o.num_passes),
               "valid": tf_records.RecordLayout(probe.tgt_len, valid_per_replica, local, hosts)}
    # Non-chief workers wait for the records the chief makes (30 minutes at most).
    metas = ensure_records(o, layouts, may_prepare=is_chief, wait_seconds=0 if is_chief else 1800)
    info = tf_records.read_corpus_info(o.data_dir) or {}
    level = info.get("level", metas["train"].get("level", "word"))
    vocab_size = int(info.get("vocab_size", metas["train"]["vocab_size"]))
    config = config_fn(vocab_size, tuple(info.get("cutoffs", ())))
    o = fit_batch(o, config, per_replica, strategy, local, is_chief)

    os.makedirs(o.model_dir, exist_ok=True)
    config_path = os.path.join(o.model_dir, txl_tf.model_dir.CONFIG_FILE)
    if os.path.exists(config_path):
        flags_model.check_against_checkpoint_config(config, txl_tf.load_config(o.model_dir),
                                                    config_path)
    if is_chief:
        txl_tf.save_config(config, o.model_dir)
        copy_data_files(o.data_dir, o.model_dir)
        if o.flags_text:
            with open(os.path.join(o.model_dir, ".tmp-flags.txt"), "w") as f:
                f.write(o.flags_text)
            os.replace(os.path.join(o.model_dir, ".tmp-flags.txt"),
                       os.path.join(o.model_dir, "flags.txt"))

    with strategy.scope():
        model = txl_tf.TransformerXL(config)
        optimizer = make_optimizer(schedule)
    trainer = Trainer(model, optimizer, strategy, clip=o.clip, grad_accum_steps=o.grad_accum_steps,
                      loss_scaling=o.precision == "mixed_float16")
    ckpts = checkpointing.TrainCheckpoints(
        o.model_dir, dict(model=model, optimizer=optimizer, step=trainer.step,
                          loss_scale=trainer.loss_scale, good_steps=trainer.good_steps,
                          dropout_rng=checkpointing.dropout_rng_state(model)),
        max_to_keep=o.keep_checkpoints, worker=worker, is_chief=is_chief)

    step, memory = ckpts.restore()
    resumed = step is not None
    lr_flags = dict(learning_rate=o.learning_rate, warmup_steps=o.warmup_steps,
                    train_steps=o.train_steps, min_lr_ratio=o.min_lr_ratio)
    summary_path = os.path.join(o.model_dir, "train_summary.json")
    if resumed and step >= o.train_steps:
        print(f"{o.model_dir} is already trained to step {step} (--train_steps={o.train_steps}); "
              "nothing to do. Raise --train_steps to train on.", flush=True)
        if os.path.exists(summary_path):
            with open(summary_path) as f:
                return json.load(f)
        return {"model_dir": os.path.abspath(o.model_dir), "step": step, "resumed": True}
    if resumed:
        logging.info("resumed from %s at step %d (memory %s)", ckpts.restored_path, step,
                     "restored" if memory is not None else "reset to zeros")
        notice = lr_schedule_notice(o.model_dir, lr_flags, step)
        if notice and is_chief:
            print(notice, flush=True)
    else:
        step = 0
        if o.init_checkpoint:
            logging.info("warm start from %s", warm_start(model, o.init_checkpoint, config))
    mems = trainer.memory_from_host(memory) if memory is not None else trainer.init_memory(
        per_replica)
    if is_chief:
        txl_tf.model_dir.write_json_atomic(
            os.path.join(o.model_dir, checkpointing.SCHEDULE_FILE), lr_flags)

    train_fn = tf_records.make_input_fn(o.data_dir, "train", layouts["train"], repeat=True,
                                        start_step=step, vocab_size=vocab_size, verify="checksum")
    iterator = iter(strategy.distribute_datasets_from_function(train_fn))
    valid_fn = tf_records.make_input_fn(o.data_dir, "valid", layouts["valid"], repeat=False,
                                        vocab_size=vocab_size, verify="checksum")

    summaries = RunSummaries(o.model_dir, level, enabled=is_chief)
    metric = metric_name(level)
    baseline = unigram_entropy(o.data_dir)
    if not resumed:
        summaries.text("config", "```\n" + json.dumps(
            {"model": config.to_dict(), "run": dataclasses.asdict(o), "replicas": replicas,
             "global_batch": global_batch, "per_replica_batch": per_replica,
             "unigram_entropy_nats": baseline}, indent=2, default=str) + "\n```")
    if is_chief:
        print(f"txl-tf training: {config.n_layer} layers, d_model {config.d_model}, "
              f"{model.count_params():,} parameters, {o.dataset} ({level}, vocab {vocab_size}), "
              f"{replicas} replica(s) x batch {per_replica} x tgt_len {config.tgt_len}, "
              f"{o.train_steps} steps" + (f", resuming at step {step}" if resumed else ""),
              flush=True)
        if baseline is not None:
            print(f"unigram baseline of the training split: {baseline:.4f} nats = "
                  f"{metric} {metric_value(baseline, level):.4f}", flush=True)
        print(f"TensorBoard: tensorboard --logdir {o.model_dir}", flush=True)

    def barrier():
        """Every worker waits here for all the others (one tiny all-reduce)."""
        strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)),
                        axis=None)

    def evaluate():
        it = iter(strategy.distribute_datasets_from_function(valid_fn))
        stats = trainer.evaluate(it, valid_per_replica, o.max_eval_batches)
        return stats.loss, stats

    end_step = o.train_steps if stop_after_steps is None else min(o.train_steps, stop_after_steps)
    window = dict(nll=0.0, tokens=0.0, norm=0.0, steps=0, seconds=0.0, last_norm=0.0)
    last_train_loss = None
    valid_loss = None
    train_seconds = 0.0
    trained_tokens = 0.0
    recent_seconds_per_step = None
    loops_done = 0
    first_loop = (0.0, 0.0)  # (seconds, tokens) of the first loop, which includes tracing

    def boundary(current, every):
        return every and current % every == 0

    while step < end_step:
        n = min(o.steps_per_loop, end_step - step)
        for every in (o.log_steps, o.save_steps, o.eval_steps):
            if every:
                n = min(n, every - step % every)
        t0 = time.time()
        mems, stats = trainer.train(iterator, mems, n)
        seconds = time.time() - t0
        step += n
        if loops_done:  # the first loop of a process includes tracing: not in the average
            train_seconds += seconds
            trained_tokens += stats.tokens
        else:
            first_loop = (seconds, stats.tokens)
        loops_done += 1
        window["nll"] += stats.nll_sum
        window["tokens"] += stats.tokens
        window["norm"] += stats.grad_norm_sum
        window["steps"] += n
        window["seconds"] += seconds
        if stats.skipped_steps:
            logging.warning("%d step(s) skipped for non-finite gradients (loss scale %.0f)",
                            stats.skipped_steps, float(trainer.loss_scale.numpy()))
        if not math.isfinite(stats.nll_sum):
            raise FloatingPointError(
                f"the training loss became {stats.nll_sum} at step {step}; lower "
                "--learning_rate, raise --warmup_steps, or use --precision=float32.")
        if boundary(step, o.log_steps) or step == o.train_steps:
            loss = window["nll"] / max(window["tokens"], 1.0)
            tokens_per_sec = window["tokens"] / max(window["seconds"], 1e-9)
            recent_seconds_per_step = window["seconds"] / window["steps"]
            lr = warmup_cosine_lr(step - 1, o.learning_rate, o.warmup_steps, o.train_steps,
                                  o.min_lr_ratio)
            grad_norm = window["norm"] / window["steps"]
            summaries.train(step, loss, lr, grad_norm, tokens_per_sec)
            line = summaries.console(step, o.train_steps, loss, lr, tokens_per_sec,
                                     recent_seconds_per_step * (o.train_steps - step))
            if is_chief:
                print(line, flush=True)
            last_train_loss = loss
            window = dict(nll=0.0, tokens=0.0, norm=0.0, steps=0, seconds=0.0)
        evaluated = False
        if boundary(step, o.eval_steps) or step == o.train_steps:
            valid_loss, vstats = evaluate()
            evaluated = True
            summaries.valid(step, valid_loss)
            if is_chief:
                print(f"valid at step {step}: loss {valid_loss:.4f} | {metric} "
                      f"{metric_value(valid_loss, level):.4f} ({int(vstats.tokens):,} tokens)",
                      flush=True)
        if boundary(step, o.save_steps) or step == o.train_steps:
            memories = (checkpointing.gather_worker_memory(
                strategy, mems, num_workers, trainer.memory_to_host(mems))
                if o.checkpoint_memory else [])  # [] -> a resumed run restarts from zeros
            path = ckpts.save(step, memories)
            if evaluated:
                ckpts.maybe_save_best(step, valid_loss, {metric: metric_value(valid_loss, level)})
            logging.info("saved %s", path)

    summary = {
        "model_dir": os.path.abspath(o.model_dir), "dataset": o.dataset, "level": level,
        "step": step, "train_steps": o.train_steps, "replicas": replicas,
        "global_batch": global_batch, "tgt_len": config.tgt_len, "mem_len": config.mem_len,
        "parameters": int(model.count_params()),
        "train_loss": last_train_loss,
        f"train_{metric}": None if last_train_loss is None else metric_value(last_train_loss,
                                                                             level),
        "valid_loss": valid_loss,
        f"valid_{metric}": None if valid_loss is None else metric_value(valid_loss, level),
        "unigram_entropy_nats": baseline,
        f"unigram_{metric}": None if baseline is None else metric_value(baseline, level),
        # Without the first loop (tracing and compilation) when there were others; a run of
        # one loop reports that loop, flagged by tokens_per_sec_includes_tracing.
        "tokens_per_sec": (trained_tokens / train_seconds if train_seconds else
                           first_loop[1] / first_loop[0] if first_loop[0] else None),
        "tokens_per_sec_includes_tracing": not train_seconds and bool(first_loop[0]),
        "wall_seconds": time.time() - start_time,
        "resumed": resumed,
    }
    if num_workers > 1:
        # No worker leaves (and takes the coordination service down) before all workers have
        # finished their last step and checkpoint.
        barrier()
    if is_chief:
        txl_tf.model_dir.write_json_atomic(summary_path, summary)
        print("train_summary " + json.dumps(summary, sort_keys=True), flush=True)
        print(f"wall time {format_duration(summary['wall_seconds'])}; model in {o.model_dir}; "
              f"TensorBoard: tensorboard --logdir {o.model_dir}", flush=True)
    return summary
