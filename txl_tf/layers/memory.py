"""Segment-level recurrence: the one place where memory is updated and gradients are cut.

Two forms of the memory:
  * growing (`update_memory`): training, evaluation and the serving signatures' score / nll.
    It holds min(mem_len, M + Q) states, so its length changes while it fills.
  * fixed (`fixed_memory_update`): generation. Exactly mem_len positions from the first token
    on, the states right-aligned in the last `valid` of them; the model masks the unfilled
    ones out of attention (`TransformerXL.call(mem_valid=...)`). Since the filled positions
    keep the key positions they would have in a growing memory of `valid` states, every
    relative distance (and every absolute position counted back from the newest key) is
    the same, and so is the output; the shapes never change, as XLA and TPUs need.
"""
import tensorflow as tf


def update_memory(previous, current, mem_len: int) -> tf.Tensor:
    """New memory of one layer: the last `mem_len` states of [previous, current], no gradient.

    Args:
      previous: [B, M, D] memory the layer attended to, or None (no memory).
      current: [B, Q, D] the layer's input for this segment.
      mem_len: how many states to keep. The result holds min(mem_len, M + Q) states: with
        zero-initialised memory of length mem_len (`TransformerXL.init_mems`) it is always
        mem_len; starting from no memory it grows segment by segment up to mem_len.

    Returns:
      float32 [B, min(mem_len, M + Q), D] under `tf.stop_gradient`.
    """
    current = tf.cast(current, tf.float32)
    states = current if previous is None else tf.concat(
        [tf.cast(previous, tf.float32), current], axis=1)
    total = tf.shape(states)[1]
    start = tf.maximum(total - mem_len, 0)
    return tf.stop_gradient(states[:, start:])


def fixed_memory_update(states, valid, count, mem_len: int):
    """The fixed memory after a segment whose first `count` tokens are real.

    Args:
      states: float32 [..., M + Q, D] every layer's [memory; segment input] (the model's "mems"
        with mem_len=M+Q), M = mem_len, the memory's last `valid` positions filled.
      valid: int32 [] filled positions of the memory before the segment.
      count: int32 [] real tokens at the start of the segment (1 <= count <= Q); the rest is
        padding that was never attended to (causal mask) and is dropped here.
      mem_len: M, a Python int.

    Returns:
      (float32 [..., M, D] the states of positions count .. count + M - 1, i.e. the last M
      before the padding; int32 [] the new count of filled positions, min(valid + count, M)).
    """
    rank = states.shape.rank
    begin = tf.concat([tf.zeros([rank - 2], tf.int32), [count, 0]], 0)
    size = tf.concat([tf.fill([rank - 2], -1), [mem_len, -1]], 0)
    memory = tf.slice(states, begin, size)
    memory = tf.ensure_shape(memory, states.shape[:-2].concatenate([mem_len]).concatenate(
        states.shape[-1:]))
    return memory, tf.minimum(valid + count, mem_len)
