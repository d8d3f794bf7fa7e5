"""A lower bound of the memory one step of a `TransformerXL` needs, to refuse impossible sizes.

Only the two terms every step certainly holds are counted, so that a size refused here could
never have run:
  * the memory: L tensors [B, M, d_model], the input of each layer;
  * the attention scores [B, H, Q, M + Q] of a layer: two of them while a layer runs (scores and
    probabilities); in training the tape keeps the probabilities of every layer as well.
Weights, feed-forward activations, logits and framework overhead come on top.
"""
import os
from typing import Optional

from txl_tf.config import ConfigError, TransformerXLConfig


class MemoryEstimateError(ConfigError):
    """Sizes whose step cannot fit in this machine's memory."""


def step_memory_bytes(config: TransformerXLConfig, batch_size: int, training: bool = False,
                      tgt_len: Optional[int] = None, mem_len: Optional[int] = None,
                      bytes_per_value: int = 4) -> int:
    """Lower bound of the bytes of the memory and attention of one step.

    Args:
      config: the model configuration.
      batch_size: B, streams computed together on this host.
      training: whether the step keeps every layer's attention for the gradient.
      tgt_len: Q, the segment length (default `config.tgt_len`).
      mem_len: M, the memory length (default `config.mem_len`).
      bytes_per_value: 4 for float32, 2 for the 16-bit activations of mixed precision.

    Returns:
      The bytes, an int.

    Example:
      >>> c = TransformerXLConfig(n_token=256, n_layer=2, d_model=32, n_head=2, d_head=16)
      >>> step_memory_bytes(c, 1, tgt_len=10, mem_len=0)  # 2 x [1, 2, 10, 10] float32
      1600
    """
    q = config.tgt_len if tgt_len is None else tgt_len
    m = config.mem_len if mem_len is None else mem_len
    memory = config.n_layer * batch_size * m * config.d_model
    scores = batch_size * config.n_head * q * (q + m)
    attention = scores * (config.n_layer + 1 if training else 2)
    return (memory + attention) * bytes_per_value


def machine_memory_bytes() -> Optional[int]:
    """This machine's RAM, or the smaller limit of its cgroup; None when unknown."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    return min(limits) if limits else None


def check_step_fits(config: TransformerXLConfig, batch_size: int, training: bool = False,
                    tgt_len: Optional[int] = None, mem_len: Optional[int] = None,
                    bytes_per_value: int = 4, available: Optional[int] = None) -> None:
    """Raises `MemoryEstimateError` when `step_memory_bytes` exceeds the machine's memory.

    Args:
      config, batch_size, training, tgt_len, mem_len, bytes_per_value: as `step_memory_bytes`.
      available: bytes to compare with (default `machine_memory_bytes()`; None: no check).
    """
    available = machine_memory_bytes() if available is None else available
    if available is None:
        return
    need = step_memory_bytes(config, batch_size, training, tgt_len, mem_len, bytes_per_value)
    if need > available:
        q = config.tgt_len if tgt_len is None else tgt_len
        m = config.mem_len if mem_len is None else mem_len
        raise MemoryEstimateError(
            f"out of memory before the first step: tgt_len {q}, mem_len {m}, batch {batch_size}, "
            f"{config.n_layer} layers need at least {need / 2**30:,.1f} GiB for the memory and "
            f"attention alone, this machine has {available / 2**30:,.1f} GiB; lower mem_len, "
            "tgt_len or the batch size.")
