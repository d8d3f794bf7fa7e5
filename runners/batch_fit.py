"""How many streams a replica can train on at once: gradient accumulation instead of running out
of memory.

A recipe fixes the global batch (e.g. 64 streams for enwik8); on fewer devices than it was written
for, each replica gets more streams than its memory holds. Rather than failing at the first step,
the run keeps the global batch and splits each replica's streams into `grad_accum_steps` chunks
whose gradients are accumulated before the one update (`runners/trainer.py`): the same update,
less activation memory.

The limit is `--max_per_replica_batch` when given (> 0), else an estimate: the activation memory
of one stream (`stream_bytes`) against the memory of one device (`device_memory_bytes`: the
available RAM on a CPU, the total memory of a GPU from `nvidia-smi`; unknown on a TPU, where
no limit is applied).
"""
import os
import subprocess
from typing import NamedTuple, Optional

import tensorflow as tf

# Fraction of a device's memory the activations may take (the rest: weights, gradients, Adam
# slots, TensorFlow's temporaries and allocator slack).
ACTIVATION_SHARE = 0.7


class Fit(NamedTuple):
    """The chosen accumulation: `grad_accum_steps`, streams per chunk and the reason (None when
    nothing had to change)."""
    grad_accum_steps: int
    chunk: int
    reason: Optional[str]


def stream_bytes(config, bytes_per_value: int = 4) -> int:
    """Estimated training memory of one stream [tgt_len] (activations kept for the backward pass
    and the memory rows), in bytes: a rough figure, meant to catch batches that are several
    times too big, not to fill a device to the last byte.

    Per layer, with Q = tgt_len, M = mem_len, K = Q + M, H heads of size Dh, width D, inner F:
    5 attention maps H*Q*K (content and position scores, the shifted positions, the
    probabilities and their dropout), the projections K*(D + 4*H*Dh) + Q*(H*Dh + 6*D + 2*F), and
    the memory M*D; the output layer keeps 3 [Q, V'] (logits, log-probabilities, their
    gradient) with V' the plain softmax size or the head of the adaptive softmax. For the
    enwik8 recipe (24 layers, d_model 1024, tgt_len = mem_len = 768) that is 6.3 GB a stream.

    Args:
      config: a `txl_tf.TransformerXLConfig`.
      bytes_per_value: 4 (float32 activations).

    Returns:
      bytes, an int.
    """
    c = config
    q, m = c.tgt_len, c.mem_len
    k, hd = q + m, c.n_head * c.d_head
    per_layer = (5 * c.n_head * q * k + k * (c.d_model + 4 * hd)
                 + q * (hd + 6 * c.d_model + 2 * c.d_inner) + m * c.d_model)
    vocab = c.n_token if not c.cutoffs else c.cutoffs[0] + len(c.cutoffs)
    output = 3 * q * vocab + 2 * q * c.d_model
    return int(bytes_per_value * (c.n_layer * per_layer + output))


def _available_ram() -> Optional[int]:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gpu_memory() -> Optional[int]:
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
        return _gpu_memory(), "GPU"
    ram = _available_ram()
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


def approx_parameters(config) -> int:
    """About the number of weights: per layer the attention projections (q, k, v, output and
    the position projection: 5 * D * H*Dh) and the feed-forward (2 * D * F), plus the embedding
    and the softmax (2 * V * D)."""
    c = config
    hd = c.n_head * c.d_head
    return c.n_layer * (5 * c.d_model * hd + 2 * c.d_model * c.d_inner) + 2 * c.n_token * c.d_model


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
        return choose_grad_accum(per_replica, given, max_per_replica_batch,
                                 f"--max_per_replica_batch={max_per_replica_batch}")
    memory, kind = device_memory_bytes(strategy, local_replicas)
    if memory is None:
        return Fit(given, per_replica // given, None)
    per_stream = stream_bytes(config)
    budget = ACTIVATION_SHARE * memory - 16 * approx_parameters(config)
    max_streams = int(budget // per_stream)
    why = (f"estimate: {per_stream / 2**30:.2f} GiB per stream, {memory / 2**30:.1f} GiB of "
           f"{kind} memory per replica; --max_per_replica_batch=N sets the limit")
    return choose_grad_accum(per_replica, given, max_streams, why)
