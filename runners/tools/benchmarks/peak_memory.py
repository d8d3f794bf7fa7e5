"""Memory: the peak resident memory of a training run, in a child process per memory length
(so that nothing of the parent's memory counts), and on an accelerator its allocator's peak
over the timed steps (`txl_tf/training/measurement/device_memory.py`), next to the estimate with which
training chooses its gradient accumulation (`txl_tf/training/batch_fit.py`)."""
import ctypes
import json
import os
import re
import subprocess
import sys

from runners.tools.benchmarks.configuration import (
    BENCH_FLAGS, ENTRY_POINT, FLAGS, MODEL_FLAGS, REPO_ROOT, model_config)
from runners.tools.benchmarks.steps import Steps
from txl_tf.training.batch_fit import memory_estimate
from txl_tf.training.measurement.device_memory import peak_memory
from txl_tf.devices.step_compilation import strategy_devices


def read_vm_hwm_mb():
    """This process image's peak resident memory (VmHWM). Unlike `ru_maxrss`, it starts afresh
    at exec: Linux carries the RSS of the forked copy of the parent into the child's
    `ru_maxrss`, so a parent of 1.6 GB made every child's figure at least 1.6 GB."""
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024.0


def reset_vm_hwm():
    """Restarts VmHWM from the current resident memory; False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def malloc_trim():
    """Return the C heap's free memory to the system (glibc); False where there is none."""
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def run_memory_child():
    """Child process: build, compile and run training steps; report peak RSS figures (MB):
    after importing TensorFlow and Keras, after building model, optimizer and data, the
    process peak (compilation and first steps included), and the peak of later steps once
    glibc has returned the compilation's freed heap (`malloc_trim`)."""
    after_import = read_vm_hwm_mb()
    config = model_config()
    steps = Steps(config, FLAGS.batch_size, FLAGS.seed)
    after_build = read_vm_hwm_mb()
    steps.time_steps("train", max(FLAGS.bench_warmup, 1))
    after_warmup = read_vm_hwm_mb()
    trimmed = malloc_trim()
    reset = reset_vm_hwm()
    steps.time_steps("train", 3)
    steady = read_vm_hwm_mb() if reset else None
    result = {"mem_len": config.mem_len, "rss_after_import_mb": after_import,
              "peak_rss_after_build_mb": after_build, "peak_rss_after_warmup_mb": after_warmup,
              "steady_step_peak_rss_mb": steady, "malloc_trim": trimmed,
              "process_peak_rss_mb": max(after_warmup, steady or 0.0)}
    print("CHILD_JSON " + json.dumps(result), flush=True)


def _flag_args(names):
    return [FLAGS[name].serialize() for name in names if FLAGS[name].value is not None]


def measure_memory_child(mem_len):
    """Run a memory child for mem_len (a fresh process: nothing of this one's memory counts)."""
    args = [sys.executable, ENTRY_POINT] + _flag_args(MODEL_FLAGS + BENCH_FLAGS)
    args += [f"--mem_len={mem_len}", "--child=memory"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                          cwd=REPO_ROOT, check=False)
    out = proc.stdout.decode()
    match = re.search(r"^CHILD_JSON (.*)$", out, re.M)
    if not match:
        raise RuntimeError(f"memory child for mem_len={mem_len} failed:\n{out[-2000:]}")
    return json.loads(match.group(1))


def memory_figures(record, config):
    """`peak_rss_mb` (the child at the configured mem_len) and `memory` (one child per
    --memory_mem_lens) into `record`; `peak_rss_mb` None with --nomeasure_memory."""
    record["peak_rss_mb"] = None
    if not FLAGS.measure_memory:
        return
    mem_lens = [int(m) for m in FLAGS.memory_mem_lens] or [config.mem_len]
    record["memory"] = [measure_memory_child(m) for m in mem_lens]
    for m in record["memory"]:
        if m["mem_len"] == config.mem_len:
            record["peak_rss_mb"] = m["process_peak_rss_mb"]


def device_memory_figures(record, config, strategy):
    """The accelerators' peak over the last round's steps (None on a CPU, with the reason) and
    the accumulation chooser's estimate of the same step (`batch_fit.memory_estimate`)."""
    peak = peak_memory(strategy_devices(strategy))
    chunk = FLAGS.batch_size // strategy.num_replicas_in_sync // FLAGS.grad_accum_steps
    record["accelerator_peak_memory_mb"] = (None if peak["peak_bytes"] is None
                                            else peak["peak_bytes"] / 2**20)
    estimate = memory_estimate(config, chunk, None, "not queried")
    record["estimated_peak_memory_mb"] = estimate["estimated_peak_bytes"] / 2**20
    record["device_memory"] = dict(peak, estimate=estimate)
