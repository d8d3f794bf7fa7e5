"""A lower bound of the memory one step of a `TransformerXL` needs, to refuse impossible sizes.

Only the two terms every step certainly holds are counted, so that a size refused here could
never have run:
  * the memory: L tensors [B, M, d_model], the input of each layer;
  * the attention scores [B, H, Q, M + Q] of a layer: two of them while a layer runs (scores and
    probabilities); in training the tape keeps the probabilities of every layer as well.
Weights, feed-forward activations, logits and framework overhead come on top.

`training_bytes_per_stream` is the fuller estimate (every activation a training step keeps) with
which a run splits a replica's streams into gradient-accumulation chunks that fit.
"""
import os
from typing import Optional

from txl_tf.model.config import ConfigError, TransformerXLConfig


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


def check_step_fits(config: TransformerXLConfig, batch_size: int,
                    available: Optional[int] = None, names: Optional[dict] = None,
                    path: str = "", **step) -> None:
    """Raises `MemoryEstimateError` when `step_memory_bytes` exceeds the machine's memory.

    Args:
      config, batch_size: as `step_memory_bytes`.
      **step: the step's keywords of `step_memory_bytes`, passed on to it: training, tgt_len,
        mem_len, bytes_per_value (by name only).
      available: bytes to compare with (default `machine_memory_bytes()`; None: no check).
      names: how the fix names what sets Q, M and B: {"tgt_len": "--seg_len", "mem_len":
        "--mem_len", "batch": "--batch_size"} (default: the config's fields, "the batch size").
      path: the path that will run, said in the message (e.g. "compiled generation").

    Call `check_weights_fit` first where the vocabulary is known, so that sizes of the
    configuration beyond the machine are named as such, not as a step's lengths.
    """
    available = machine_memory_bytes() if available is None else available
    if available is None:
        return
    need = step_memory_bytes(config, batch_size, **step)
    if need > available:
        q = config.tgt_len if step.get("tgt_len") is None else step["tgt_len"]
        m = config.mem_len if step.get("mem_len") is None else step["mem_len"]
        names = {"tgt_len": "tgt_len", "mem_len": "mem_len", "batch": "the batch size",
                 **(names or {})}
        # the fix names first what grows most: with M, the memory L*B*M*D and the scores'
        # B*H*Q*M; with Q alone, the scores' B*H*Q*Q
        with_m = (config.n_layer * batch_size * m * config.d_model
                  + batch_size * config.n_head * q * m)
        with_q = batch_size * config.n_head * q * q
        order = ["mem_len", "tgt_len"] if with_m >= with_q else ["tgt_len", "mem_len"]
        fix = [names[k] for k in order if names.get(k)] + [names["batch"]]
        where = f" ({path})" if path else ""
        raise MemoryEstimateError(
            f"out of memory before the first step{where}: tgt_len {q}, mem_len {m}, batch "
            f"{batch_size}, {config.n_layer} layers need at least {_size(need)} for "
            f"the memory and attention alone, this machine has {_size(available)}; "
            f"lower {', '.join(fix[:-1])} or {fix[-1]}.")


def weight_bytes(config: TransformerXLConfig, bytes_per_weight: int = 4) -> int:
    """Bytes of the weights of `config` (`approx_parameters` x `bytes_per_weight`)."""
    return approx_parameters(config) * bytes_per_weight


def check_weights_fit(config: TransformerXLConfig, bytes_per_weight: int = 4,
                      available: Optional[int] = None, source: str = "the configuration") -> None:
    """Raises `MemoryEstimateError`, naming the fields that make the weights large, when the
    weights of `config` alone exceed the machine's memory: checked before a model is built, so
    that a config.json of sizes no machine here can hold fails at once, not half-way.

    Args:
      config: the model configuration.
      bytes_per_weight: 4 (float32 weights).
      available: bytes to compare with (default `machine_memory_bytes()`; None: no check).
      source: what sets the fields, for the message (a config.json path, "the model flags").
    """
    available = machine_memory_bytes() if available is None else available
    if available is None:
        return
    need = weight_bytes(config, bytes_per_weight)
    if need <= available:
        return
    c = config
    hd = c.n_head * c.d_head
    # the largest of the three terms of `approx_parameters`, and its factors by how far each is
    # above a typical size (the config's defaults; WikiText-103's vocabulary)
    terms = [(2 * c.n_token * c.d_model, ("n_token", "d_model")),
             (c.n_layer * 5 * c.d_model * hd, ("n_layer", "d_model", "n_head", "d_head")),
             (c.n_layer * 2 * c.d_model * c.d_inner, ("n_layer", "d_model", "d_inner"))]
    factors = max(terms)[1]
    ratio = {name: getattr(c, name) / _TYPICAL[name] for name in factors}
    ranked = sorted(factors, key=ratio.get, reverse=True)
    blame = [ranked[0]] + [n for n in ranked[1:2] if ratio[n] > 10]
    values = ", ".join(f"{name} {getattr(c, name)}" for name in _TYPICAL)
    raise MemoryEstimateError(
        f"the model's weights alone need {_size(need)} ({values}: about "
        f"{approx_parameters(c):,} weights), this machine has {_size(available)}; "
        f"{source} sets them: lower {' or '.join(blame)}.")


# Typical sizes, to tell which field makes the weights large.
_TYPICAL = dict(n_layer=6, d_model=500, n_head=10, d_head=50, d_inner=1000, n_token=267_735)


def _size(num_bytes: int) -> str:
    """'289.1 GiB', or '3.0 MiB' below a GiB."""
    if num_bytes >= 2**30:
        return f"{num_bytes / 2**30:,.1f} GiB"
    return f"{num_bytes / 2**20:,.1f} MiB"


def training_bytes_per_stream(config: TransformerXLConfig, bytes_per_value: int = 4) -> int:
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
      config: the model configuration.
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


def approx_parameters(config: TransformerXLConfig) -> int:
    """About the number of weights: per layer the attention projections (q, k, v, output and
    the position projection: 5 * D * H*Dh) and the feed-forward (2 * D * F), plus the embedding
    and the softmax (2 * V * D)."""
    c = config
    hd = c.n_head * c.d_head
    per_layer = 5 * c.d_model * hd + 2 * c.d_model * c.d_inner
    return c.n_layer * per_layer + 2 * c.n_token * c.d_model


def available_memory_bytes() -> Optional[int]:
    """The RAM available now (MemAvailable), capped by `machine_memory_bytes`; None when unknown."""
    free = _mem_available()
    limit = machine_memory_bytes()
    known = [v for v in (free, limit) if v is not None]
    return min(known) if known else None


def _mem_available() -> Optional[int]:
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
