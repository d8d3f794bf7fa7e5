"""Segment-level recurrence: the one place where memory is updated and gradients are cut."""
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
