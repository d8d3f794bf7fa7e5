"""The causal attention mask over memory + segment, with the reference's `same_length`."""
import tensorflow as tf


def attention_mask(qlen, mlen, same_length: bool = False) -> tf.Tensor:
    """Which keys each query may attend to.

    Keys are the mlen memory positions followed by the qlen segment positions; query i sits at
    key position mlen + i. Query i may attend to key j iff j <= mlen + i; with `same_length`
    it additionally may not attend to j < i, so every query sees exactly mlen + 1 keys (the
    reference TF semantics, where the memory always holds mem_len states).

    Example, qlen = 3, mlen = 2 (1 = may attend):

        same_length=False        same_length=True
        keys:  m m s s s         keys:  m m s s s
        q0     1 1 1 0 0         q0     1 1 1 0 0
        q1     1 1 1 1 0         q1     0 1 1 1 0
        q2     1 1 1 1 1         q2     0 0 1 1 1

    Returns:
      bool [qlen, mlen + qlen], True where attention is allowed.
    """
    query = tf.range(qlen)[:, None]
    key = tf.range(mlen + qlen)[None, :]
    allowed = key <= query + mlen
    if same_length:
        allowed = tf.logical_and(allowed, key >= query)
    return allowed
