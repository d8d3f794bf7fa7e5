"""One paper recipe's training step, run for a few dozen steps against a deadline.

The step is the benchmark's `Steps` (`Trainer.train` of txl_tf.training.trainer, the step
train.py runs: token-mean NLL, all-reduced gradients, clip, the recipe's optimizer and schedule,
gradient accumulation, memory carried; compiled as `--jit_compile` chooses) over the recipe's
global batch, split into the chunks the accumulation chooser (`txl_tf/training/batch_fit.py`)
picks for the device, as train.py does. The corpus is a stand-in: random tokens of the recipe's
vocabulary (the prepared corpus's `vocab_size` when `--data_dir` of the flagfile holds one, else
the size of the paper's corpus); a step's cost depends on the shapes and the vocabulary, not on
the text.

Flags: a recipe's flagfile is read into the process's flags (those of train.py and of the
benchmark, `configuration.py`), then the smoke shapes (`--smoke`), then the overrides of the
command line, so `--jit_compile=false` or `--max_per_replica_batch=4` apply to every run.
"""
import gc
import os
import statistics
import time

import keras
import tensorflow as tf

import tf_records
from tf_records import data_dir_layout
from runners.tools.benchmarks.configuration import FLAGS, REPO_ROOT, model_config
from runners.tools.benchmarks.configuration import strategy_and_compilation
from runners.tools.benchmarks.steps import Steps
from txl_tf.model import flops as model_flops
from txl_tf.runtime.error_text import first_line
from txl_tf.training import batch_fit, distribute
from txl_tf.training.measurement import duration
from txl_tf.training.measurement.device_memory import peak_memory, reset_peaks
from txl_tf.devices.step_compilation import strategy_devices

RECIPES = ("wt103_base", "enwik8_base", "enwik8")
# The paper corpora's vocabularies (tf_records/corpora/enwik8.py, text8.py, wikitext.py); another
# corpus's comes from its prepared directory.
PAPER_VOCABULARY = {"enwik8": 204, "text8": 27, "wt103": 267735}


class RecipeError(ValueError):
    """A recipe the report cannot run (one line: the problem and the fix)."""
# --smoke: tiny shapes for a check of the whole report on a CPU (the vocabulary is scaled
# down to SMOKE_VOCABULARY at most, the recipe's cutoffs with it).
SMOKE_SHAPES = dict(n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32, tgt_len=8, mem_len=8,
                    train_batch_size=4, jit_compile="false")  # tracing only: no XLA compilation
SMOKE_VOCABULARY = 300


class FlagState:
    """The values of every flag and Keras's dtype policy, kept to be put back when the report
    ends (it sets the flags and the policy of each run in this process)."""

    def __init__(self):
        self.values = {name: (FLAGS[name].value, FLAGS[name].present) for name in FLAGS}
        self.policy = keras.config.dtype_policy()

    def restore(self):
        for name, (value, present) in self.values.items():
            FLAGS[name].value, FLAGS[name].present = value, present
        keras.config.set_dtype_policy(self.policy)


def flagfile(recipe):
    """runners/<recipe>.flags."""
    return os.path.join(REPO_ROOT, "runners", f"{recipe}.flags")


def training_recipes():
    """The names of runners/*.flags that train (not the eval_*.flags of evaluate.py)."""
    names = [n[:-len(".flags")] for n in os.listdir(os.path.join(REPO_ROOT, "runners"))
             if n.endswith(".flags")]
    return sorted(n for n in names if not n.startswith("eval_"))


def _written(recipe):
    """{flag name: value} as runners/<recipe>.flags writes them."""
    args = FLAGS.read_flags_from_files([f"--flagfile={flagfile(recipe)}"], force_gnu=True)
    return dict(a.lstrip("-").split("=", 1) for a in args if "=" in a)


def check_recipe(recipe):
    """Raises `RecipeError` unless `recipe` is a training recipe of runners/ whose vocabulary
    is known here (a paper corpus, or one prepared in the flagfile's --data_dir)."""
    known = training_recipes()
    if recipe not in known:
        raise RecipeError(f"no training recipe runners/{recipe}.flags; choose among "
                          f"{', '.join(known)}.")
    written = _written(recipe)
    vocabulary(written.get("dataset"), written.get("data_dir"), recipe)


def vocabulary(dataset, data_dir, recipe="the recipe"):
    """(vocabulary size, where it comes from): the prepared corpus's when `data_dir` holds
    one, else the paper corpus's; `RecipeError` when neither is known."""
    path = data_dir if os.path.isabs(data_dir or "") else os.path.join(REPO_ROOT, data_dir or "")
    if data_dir and os.path.exists(os.path.join(path, data_dir_layout.CORPUS_INFO_FILE)):
        try:
            return int(tf_records.read_corpus_info(path)["vocab_size"]), f"corpus in {data_dir}"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if dataset not in PAPER_VOCABULARY:
        raise RecipeError(
            f"{recipe} trains on {dataset}, whose vocabulary size is not known here: prepare it "
            f"(python runners/prepare_data.py with the recipe's --dataset and "
            f"--data_dir={data_dir}) so that its corpus-info.json gives it, or choose a recipe "
            f"that trains on {', '.join(sorted(PAPER_VOCABULARY))}.")
    return PAPER_VOCABULARY[dataset], f"stand-in: random tokens of {dataset}'s vocabulary"


def _scaled_cutoffs(cutoffs, vocab, smoke_vocab):
    if cutoffs in ("", "none", None):
        return "none"
    kept = sorted({max(1, int(c) * smoke_vocab // vocab) for c in cutoffs.split(",")})
    kept = [c for c in kept if 0 < c < smoke_vocab]
    return ",".join(str(c) for c in kept) or "none"


def apply_recipe(recipe, precision, overrides=(), smoke=False, shape=None):
    """Sets the flags of `recipe` in `precision`: its flagfile, --n_token and --batch_size
    (the recipe's global batch), the smoke shapes, `shape` (e.g. the NVIDIA shape), then the
    command line's `overrides` (serialised flags). Returns the vocabulary's source."""
    FLAGS(["report"] + FLAGS.read_flags_from_files([f"--flagfile={flagfile(recipe)}"],
                                                      force_gnu=True))
    n_token, source = vocabulary(FLAGS.dataset, FLAGS.data_dir)
    settings = {"precision": precision, "n_token": n_token}
    if smoke:
        small = min(n_token, SMOKE_VOCABULARY)
        settings.update(SMOKE_SHAPES, n_token=small,
                        cutoffs=_scaled_cutoffs(FLAGS.cutoffs, n_token, small))
        source += f", scaled to {small} by --smoke"
    settings.update(shape or {})
    FLAGS(["report"] + [f"--{k}={v}" for k, v in settings.items()] + list(overrides))
    FLAGS.batch_size = FLAGS.train_batch_size
    return source


def _release():
    keras.backend.clear_session()
    gc.collect()


def run_recipe(name, deadline, max_steps, devices, rate, physical_devices=1, profile=None,
               clock=time.perf_counter):
    """Runs the training step of the flags set by `apply_recipe` until `max_steps` timed steps
    or `deadline`; returns its figures.

    Args:
      name: the run's name in the report.
      deadline: `clock()` time after which no further step starts.
      max_steps: timed steps at most (after the first, which compiles); the first after it is
        timed whatever the deadline.
      devices: the replicas' devices (one: `one_device`; more: `mirrored`).
      rate: the matmul rate (FLOP/s) of one device in the run's precision, or None.
      physical_devices: the physical devices behind `devices` (two logical devices of one
        card share its rate).
      profile: None, or (logdir, steps, deadline): after the timed steps, profile that many
        steps into logdir/plugins/profile/ when `deadline` leaves time for them.

    Returns:
      {"name", "recipe shapes", "global_batch", "grad_accum_steps", "streams_per_chunk",
       "compile_s", "step_s", "steps_timed", "tokens_per_s", "mfu", "flops_per_step",
       "estimated_step_s", "measured_over_estimate", "peak_device_memory_bytes",
       "chooser_estimate_bytes", "losses", "profiled_steps", "cut"} (None where not measured).
    """
    FLAGS.strategy = "one_device" if len(devices) == 1 else "mirrored"
    FLAGS.devices = list(devices)
    strategy, compilation = strategy_and_compilation()
    replicas = strategy.num_replicas_in_sync
    config = model_config()
    batch = FLAGS.batch_size
    fit = batch_fit.fit_per_replica_batch(config, batch // replicas, FLAGS.grad_accum_steps,
                                          FLAGS.max_per_replica_batch, strategy,
                                          distribute.local_replicas(strategy))
    given_accum = FLAGS.grad_accum_steps
    FLAGS.grad_accum_steps = fit.grad_accum_steps
    record = {"name": name, "precision": FLAGS.precision, "replicas": replicas,
              "devices": list(devices), "n_layer": config.n_layer, "d_model": config.d_model,
              "tgt_len": config.tgt_len, "mem_len": config.mem_len, "n_token": config.n_token,
              "global_batch": batch, "grad_accum_steps": fit.grad_accum_steps,
              "streams_per_chunk": fit.chunk, "accumulation_reason": fit.reason,
              "compilation": compilation.line}
    try:
        steps = Steps(config, batch, FLAGS.seed, strategy, compilation)
        run_devices = strategy_devices(strategy)
        reset_peaks(run_devices)
        start = clock()
        losses = [steps.train()]
        record["compile_s"] = clock() - start
        seconds = []
        while len(seconds) < max_steps and (not seconds or clock() + seconds[-1] < deadline):
            start = clock()
            losses.append(steps.train())
            seconds.append(clock() - start)
        record["cut"] = len(seconds) < max_steps
        memory = peak_memory(run_devices)
        record.update(_speed(config, fit, batch, seconds, rate, physical_devices))
        record.update(losses=losses, peak_device_memory_bytes=memory["peak_bytes"],
                      peak_device_memory_reason=memory["reason"],
                      chooser_estimate_bytes=fit.estimate["estimated_peak_bytes"],
                      profiled_steps=_profile(steps, profile, seconds, clock))
    finally:
        FLAGS.grad_accum_steps = given_accum
        steps = None
        _release()
    return record


def _speed(config, fit, batch, seconds, rate, physical_devices):
    """Seconds per step, tokens/s, MFU and the FLOP estimate against the measured step."""
    step_s = statistics.median(seconds) if seconds else None
    tokens = batch * config.tgt_len
    per_token = model_flops.train_flops_per_token(config, fit.chunk, config.tgt_len,
                                                  config.mem_len)
    out = {"steps_timed": len(seconds), "step_s": step_s, "step_s_all": seconds,
           "tokens_per_s": tokens / step_s if step_s else None,
           "flops_per_step": per_token * tokens, "matmul_rate": rate,
           "mfu": None, "estimated_step_s": None, "measured_over_estimate": None}
    if rate:
        estimate = duration.estimate_step(config, fit.chunk, batch, physical_devices, rate)
        out["estimated_step_s"] = estimate.seconds
        if step_s:
            out["mfu"] = per_token * tokens / step_s / (rate * physical_devices)
            out["measured_over_estimate"] = step_s / estimate.seconds
    return out


def _profile(steps, profile, seconds, clock):
    """Profiles `profile[1]` steps into `profile[0]` when `profile[2]` leaves time; returns
    how many were profiled or the reason none were."""
    if profile is None:
        return None
    logdir, count, deadline = profile
    needed = (statistics.median(seconds) if seconds else 0.0) * (count + 1)
    if not seconds or clock() + needed > deadline:
        return "not profiled: no time left before the run's deadline"
    try:
        tf.profiler.experimental.start(logdir)
    except (tf.errors.OpError, RuntimeError) as error:  # e.g. another profile is running
        return f"not profiled: {first_line(error)}"
    try:
        steps.time_steps("train", count)
    finally:
        tf.profiler.experimental.stop()
    return count


def precision_rate(rates, precision):
    """FLOP/s of the rate measured for `precision`'s products, or None."""
    rate = (rates or {}).get(precision)
    return rate.flops_per_second if rate is not None else None

