"""The peak memory TensorFlow's allocator reached on the accelerators of a run.

`tf.config.experimental.get_memory_info(device)['peak']` is the most memory a GPU's (or TPU's)
allocator held since the process started or since `reset_peaks` (run after measurements that
are not the run's own, such as the matmul rate). On a CPU it counts only TensorFlow's CPU tensor
allocator (0 before the first tensor, then the tensors' bytes), not what the process holds, so a
CPU's peak is None with the reason; the benchmark measures the process's peak resident memory
there instead.

Example:
  >>> reset_peaks(["/GPU:0"])
  >>> ... train ...
  >>> peak_memory(["/GPU:0"])
  {'peak_bytes': 12884901888, 'devices': {'/GPU:0': 12884901888}, 'reason': None}
"""
from typing import Callable, Optional, Sequence

import tensorflow as tf

from txl_tf.devices.step_compilation import device_type

CPU_REASON = ("a CPU's get_memory_info counts TensorFlow's CPU tensor allocator only, not the "
              "process's memory; see the process's peak resident memory")


def peak_memory(devices: Sequence[str],
                memory_info: Callable[[str], dict] = tf.config.experimental.get_memory_info
                ) -> dict:
    """The allocator's peak on each device and the largest.

    Args:
      devices: the run's device names on this host (e.g. a strategy's worker devices).
      memory_info: `tf.config.experimental.get_memory_info` (tests pass a fake).

    Returns:
      {"peak_bytes": the largest peak (int) or None, "devices": {name: bytes or None},
       "reason": None, or why there is no figure (a CPU, or the query failed)}.
    """
    peaks, reasons = {}, []
    for device in devices:
        if device_type(device) == "CPU":
            peaks[device] = None
            reasons.append(CPU_REASON)
            continue
        try:
            peaks[device] = int(memory_info(device)["peak"])
        except (ValueError, KeyError, TypeError, tf.errors.OpError) as error:
            peaks[device] = None
            reasons.append(f"get_memory_info({device!r}) failed: {error}")
    known = [p for p in peaks.values() if p is not None]
    reason: Optional[str] = None if known else (reasons[0] if reasons else "no device")
    return {"peak_bytes": max(known) if known else None, "devices": peaks, "reason": reason}


def reset_peaks(devices: Sequence[str],
                reset: Callable[[str], None] = tf.config.experimental.reset_memory_stats
                ) -> None:
    """Start the accelerators' peaks afresh (nothing on a CPU, or where TensorFlow cannot)."""
    for device in devices:
        if device_type(device) == "CPU":
            continue
        try:
            reset(device)
        except (ValueError, tf.errors.OpError):
            pass
