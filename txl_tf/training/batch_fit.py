"""How many streams a replica can train on at once: gradient accumulation instead of running out
of memory.

A recipe fixes the global batch (e.g. 64 streams for enwik8); on fewer devices than it was
written for, each replica gets more streams than its memory holds. Rather than failing at the
first step, the run keeps the global batch and splits each replica's streams into
`grad_accum_steps` chunks whose gradients are accumulated before the one update
(`txl_tf/training/trainer.py`): the same update, less activation memory.

The limit is `--max_per_replica_batch` when given (> 0), else an estimate: the activation memory
of one stream (`txl_tf.model.memory_estimate.training_bytes_per_stream`) against the memory of one
device (`device_memory_bytes`: the available RAM on a CPU, the total memory of a GPU from
`nvidia-smi`; unknown on a TPU, where no limit is applied).
"""
import subprocess
from typing import NamedTuple, Optional

import tensorflow as tf

from txl_tf.model.memory_estimate import (MemoryEstimateError, approx_parameters,
                                    available_memory_bytes, training_bytes_per_stream)

# Fraction of a device's memory the activations may take (the rest: weights, gradients, Adam
# slots, TensorFlow's temporaries and allocator slack).
ACTIVATION_SHARE = 0.7


class Fit(NamedTuple):
    """The chosen accumulation: `grad_accum_steps`, streams per chunk, the reason (None when
    nothing had to change) and the memory estimate behind it (`memory_estimate`; None when
    none was made), which a run records next to the measured peak."""
    grad_accum_steps: int
    chunk: int
    reason: Optional[str]
    estimate: Optional[dict] = None






def gpu_memory_bytes() -> Optional[int]:
    """The total memory of this machine's smallest GPU (`nvidia-smi`), None when unknown."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
        return min(int(v) for v in out.split()) * 1024 * 1024
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def device_memory_bytes(strategy: tf.distribute.Strategy, local_replicas: int):
    """(bytes one replica may use, device description) or (None, description) when unknown.

    CPU replicas share the machine's available RAM; a GPU replica has its GPU's memory (the
    smallest GPU's, from `nvidia-smi`); TPU memory is not queried.
    """
    try:
        devices = list(strategy.extended.worker_devices)
    except RuntimeError:
        devices = []
    kinds = {tf.DeviceSpec.from_string(d).device_type for d in devices} or (
        {"GPU"} if tf.config.list_logical_devices("GPU") else {"CPU"})
    if "TPU" in kinds:
        return None, "TPU"
    if "GPU" in kinds:
        return gpu_memory_bytes(), "GPU"
    ram = available_memory_bytes()
    return (None if ram is None else ram // max(local_replicas, 1)), "CPU"


def choose_grad_accum(per_replica: int, given: int, max_streams: Optional[int],
                      why: str = "") -> Fit:
    """The smallest accumulation >= `given` that divides `per_replica` into chunks of at most
    `max_streams` streams.

    Args:
      per_replica: streams per replica per step (global batch / replicas).
      given: `--grad_accum_steps` (a floor).
      max_streams: the most streams one chunk may have (None: no limit).
      why: where the limit comes from, for the reason text.

    Returns:
      `Fit(grad_accum_steps, chunk, reason)`; reason is None when `given` already fits.

    Example:
      >>> choose_grad_accum(64, 1, 5).grad_accum_steps   # 16 chunks of 4 streams
      16
    """
    if max_streams is None or per_replica // given <= max_streams:
        return Fit(given, per_replica // given, None)
    for k in range(given, per_replica + 1):
        if per_replica % k == 0 and per_replica // k <= max(max_streams, 1):
            break
    chunk = per_replica // k
    note = "" if max_streams >= 1 else " (even one stream may not fit: lower tgt_len/mem_len)"
    reason = (f"gradient accumulation: {per_replica} streams per replica do not fit ({why}); "
              f"--grad_accum_steps={k} runs {k} chunks of {chunk} stream(s) and applies one "
              f"update per step: same global batch, same update{note}")
    return Fit(k, chunk, reason)




def check_one_stream_fits(config, per_stream: int, memory: int, kind: str) -> None:
    """Raises `MemoryEstimateError` when the weights of `config` with their gradients and Adam
    state (16 bytes a weight) and the activations of one stream (`per_stream` bytes) exceed
    `memory`, the bytes of one replica's `kind` device: such a run could not take one step."""
    weights = 16 * approx_parameters(config)
    if weights + per_stream <= memory:
        return
    c = config
    raise MemoryEstimateError(
        f"out of memory before the first step: a model of n_layer {c.n_layer}, d_model "
        f"{c.d_model}, d_inner {c.d_inner} needs about {weights / 2**30:,.1f} GiB for its weights, "
        f"gradients and Adam state and {per_stream / 2**30:,.1f} GiB for one stream of tgt_len "
        f"{c.tgt_len} (mem_len {c.mem_len}), one replica here has {memory / 2**30:,.1f} GiB of "
        f"{kind} memory; use a smaller model or tgt_len / mem_len, or a machine with more "
        "memory.")


def fit_per_replica_batch(config, per_replica: int, given: int, max_per_replica_batch: int,
                          strategy: tf.distribute.Strategy, local_replicas: int) -> Fit:
    """`choose_grad_accum` with the limit of `--max_per_replica_batch` (> 0) or the estimate.

    Args:
      config: the model's `TransformerXLConfig`.
      per_replica: streams per replica per step.
      given: `--grad_accum_steps`.
      max_per_replica_batch: > 0: the limit; 0: estimated from the device memory.
      strategy, local_replicas: where the replicas run. The weights (x4: weight, gradient, two
        Adam slots, float32; `approx_parameters`) are set aside from the device memory.
    """
    if max_per_replica_batch > 0:
        fit = choose_grad_accum(per_replica, given, max_per_replica_batch,
                                f"--max_per_replica_batch={max_per_replica_batch}")
        return fit._replace(estimate=memory_estimate(config, fit.chunk, None, "not queried"))
    memory, kind = device_memory_bytes(strategy, local_replicas)
    if memory is None:
        fit = Fit(given, per_replica // given, None)
        return fit._replace(estimate=memory_estimate(config, fit.chunk, None, kind))
    per_stream = training_bytes_per_stream(config)
    check_one_stream_fits(config, per_stream, memory, kind)
    budget = ACTIVATION_SHARE * memory - 16 * approx_parameters(config)
    max_streams = int(budget // per_stream)
    why = (f"estimate: {per_stream / 2**30:.2f} GiB per stream, {memory / 2**30:.1f} GiB of "
           f"{kind} memory per replica; --max_per_replica_batch=N sets the limit")
    fit = choose_grad_accum(per_replica, given, max_streams, why)
    return fit._replace(estimate=memory_estimate(config, fit.chunk, memory, kind))


def memory_estimate(config, chunk: int, device_bytes: Optional[int], device: str) -> dict:
    """What the chooser assumes one replica's step needs: `chunk` streams of activations
    (`training_bytes_per_stream`) and the float32 weights, gradients and two Adam slots
    (16 bytes a weight, `approx_parameters`), against the device's memory, for comparison
    with the allocator's measured peak (`txl_tf/training/measurement/device_memory.py`).

    Returns:
      {"activation_bytes_per_stream", "streams_per_chunk", "weights_and_adam_bytes",
       "estimated_peak_bytes", "device_memory_bytes" (None: unknown or not queried),
       "device" ('GPU', 'CPU', 'TPU' or 'not queried'), "activation_share"}.
    """
    per_stream = training_bytes_per_stream(config)
    weights = 16 * approx_parameters(config)
    return {"activation_bytes_per_stream": per_stream, "streams_per_chunk": chunk,
            "weights_and_adam_bytes": weights,
            "estimated_peak_bytes": chunk * per_stream + weights,
            "device_memory_bytes": device_bytes, "device": device,
            "activation_share": ACTIVATION_SHARE}
