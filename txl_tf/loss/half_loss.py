"""The paper's "half loss" for models without recurrence (Dai et al. 2019, section 4.2, Table 6).

"Full" and "half" losses apply the cross entropy to all positions of a segment or only to its
recent half. Without memory, query i of a segment attends to only i + 1 keys, so the half loss
leaves out the positions with the shortest attention lengths. The reference code has no such
option; this module defines it from the paper's sentence.

Size glossary: B batch, Q segment length.
"""
import tensorflow as tf


def half_loss_mask(nll: tf.Tensor, labels: tf.Tensor = None) -> tf.Tensor:
    """Weights that keep only the second half of every segment.

    Position i of a segment of Q tokens counts iff i >= Q // 2: the last Q - Q // 2 positions
    (Q/2 for even Q, (Q+1)/2 for odd Q), i.e. every position that attends to at least
    Q // 2 + 1 keys without memory. Q is the length of the given segment (a shorter last segment
    is halved on its own length).

    Args:
      nll: [B, Q] per-token losses (only the shape is used).
      labels: optional int [B, Q]; positions with a negative label (padding) get weight 0 too.

    Returns:
      float32 [B, Q] of 0 and 1.

    Example:
      >>> half_loss_mask(tf.zeros([1, 5])).numpy()
      array([[0., 0., 1., 1., 1.]], dtype=float32)
    """
    shape = tf.shape(nll)
    qlen = shape[1]
    recent = tf.range(qlen) >= qlen // 2  # [Q]
    weights = tf.broadcast_to(tf.cast(recent, tf.float32)[None, :], shape[:2])
    if labels is not None:
        weights = weights * tf.cast(labels >= 0, tf.float32)
    return weights


def weighted_mean_loss(nll: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
    """Mean of the counted token losses: sum(nll * weights) / sum(weights), 0 if none counts.

    With `half_loss_mask` this is the mean over the second-half tokens only, each token
    weighing the same (the first-half tokens neither add to the numerator nor to the count).

    Args:
      nll: [B, Q] per-token losses (any float dtype).
      weights: [B, Q] float weights (e.g. `half_loss_mask(nll, labels)`).

    Returns:
      float32 scalar.
    """
    nll = tf.cast(nll, tf.float32)
    weights = tf.cast(weights, tf.float32)
    return tf.math.divide_no_nan(tf.reduce_sum(nll * weights), tf.reduce_sum(weights))
