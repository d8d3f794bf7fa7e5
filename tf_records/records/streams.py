"""The cut of a token stream into a layout's streams and steps (pure NumPy, shared by the
writer and the in-memory reader, so both yield the same elements).

Given `tokens` [N] and a `RecordLayout` (`tf_records.records.layout`) with `S = num_streams`
streams and segment length `T = tgt_len`:

1. `num_passes` copies of the stream are concatenated; copy 0 is the stream itself and copy
   `p > 0` is the stream cyclically rotated left by `offsets[p]` (seeded random offsets,
   recorded in the metadata; the reference used unseeded offsets for every copy).
2. The result is cut row-major into `S` contiguous rows of `L` tokens: row `s` is
   `data[s*L:(s+1)*L]` (`drop`: `L = len // S`, the last `len % S` tokens are dropped;
   `pad`: `L = ceil(len / S)` and the end is padded).
3. Step `t` of stream `s` has `inputs = row[t*T:(t+1)*T]` and
   `labels = row[t*T+1:(t+1)*T+1]`. `drop` keeps `(L-1)//T` whole steps and drops the last partial
   segment of every row; `pad` keeps `ceil((L-1)/T)` steps, padding inputs with 0 and labels
   with -1.
"""
import hashlib

import numpy as np

from tf_records.errors import LayoutError

PAD_LABEL = -1


def pass_offsets(num_tokens: int, num_passes: int, seed: int = 0) -> list:
    """Rotation offsets, one per pass: `[0, r1, r2, ...]` with `r_p` uniform in `[0, N)`."""
    rng = np.random.default_rng(seed)
    return [0] + [int(x) for x in rng.integers(0, max(num_tokens, 1), size=num_passes - 1)]


def stream_matrix(tokens: np.ndarray, layout, offsets=None):
    """The streams of a layout as one matrix.

    Args:
      tokens: int `[N]` token ids.
      layout: the `RecordLayout`.
      offsets: rotation offsets, one per pass (default: no rotation).

    Returns:
      `(matrix, num_steps)`: int32 `[num_streams, num_steps * tgt_len + 1]`, row `s` =
      stream `s` (`PAD_LABEL` where padded).

    Raises:
      LayoutError: the corpus is too short for one step of the layout.
    """
    tokens = np.asarray(tokens, np.int32).reshape(-1)
    n = tokens.size
    offsets = offsets if offsets is not None else [0] * layout.num_passes
    if len(offsets) != layout.num_passes:
        raise LayoutError(f"{len(offsets)} pass offsets for num_passes={layout.num_passes}.")
    data = tokens if layout.num_passes == 1 else np.concatenate(
        [np.roll(tokens, -int(off)) for off in offsets])
    s, t = layout.num_streams, layout.tgt_len
    need = s * (t + 1) if layout.last_segment == "drop" else 2 * s
    if data.size < need:
        raise LayoutError(
            f"the corpus is too short for one batch: {n} tokens x {layout.num_passes} passes = "
            f"{data.size}, but {layout.num_streams} streams of tgt_len {t} need at least {need} "
            f"({'num_streams * (tgt_len + 1)' if layout.last_segment == 'drop' else '2 per stream'}). "
            "Use a smaller --per_replica_batch / --tgt_len / fewer replicas, or a longer corpus.")
    if layout.last_segment == "drop":
        length = data.size // s
        steps = (length - 1) // t
        matrix = data[: s * length].reshape(s, length)[:, : steps * t + 1]
    else:
        length = -(-data.size // s)
        steps = -(-(length - 1) // t)
        matrix = np.full((s, steps * t + 1), PAD_LABEL, np.int32)
        padded = np.full(s * length, PAD_LABEL, np.int32)
        padded[: data.size] = data
        matrix[:, :length] = padded.reshape(s, length)
    return matrix, steps


def step_windows(matrix: np.ndarray, tgt_len: int, step_begin: int, step_end: int, streams=None):
    """The segments of steps `[step_begin, step_end)` of some streams.

    Args:
      matrix: the stream matrix of `stream_matrix`.
      tgt_len: segment length Q.
      step_begin, step_end: the steps.
      streams: stream indices (default all).

    Returns:
      `(inputs, labels)`, int32 `[step_end - step_begin, len(streams), Q]` in (step, stream)
      order; padded inputs are 0 and padded labels `PAD_LABEL`.
    """
    rows = matrix if streams is None else matrix[streams]
    t = tgt_len
    block = rows[:, step_begin * t: step_end * t + 1]
    k = step_end - step_begin
    inputs = block[:, :-1].reshape(rows.shape[0], k, t).transpose(1, 0, 2)
    labels = block[:, 1:].reshape(rows.shape[0], k, t).transpose(1, 0, 2)
    inputs = np.where(inputs < 0, 0, inputs) if (inputs < 0).any() else inputs
    return np.ascontiguousarray(inputs), np.ascontiguousarray(labels)


def host_streams(layout, host: int) -> np.ndarray:
    """Stream indices of `host`, in replica-major order: replica r owns
    `[host*per_host_batch + r*per_replica_batch, ... + per_replica_batch)`."""
    b = layout.per_host_batch
    return np.arange(host * b, (host + 1) * b)


def tokens_sha256(tokens: np.ndarray) -> str:
    """sha256 hex of the tokens as little-endian int32."""
    return hashlib.sha256(memoryview(np.ascontiguousarray(tokens, "<i4")).cast("B")).hexdigest()
