"""The causal attention mask over memory + segment, with the reference's `same_length`."""
import tensorflow as tf


def attention_mask(qlen, mlen, same_length: bool = False, mem_valid=None) -> tf.Tensor:
    """Which keys each query may attend to.

    Keys are the mlen memory positions followed by the qlen segment positions; query i sits at
    key position mlen + i. Query i may attend to key j iff j <= mlen + i; with `same_length`
    it additionally may not attend to j < i, so every query sees exactly mlen + 1 keys (the
    reference TF semantics, where the memory always holds mem_len states).

    A fixed-size memory (`mem_valid` given) holds its states in its last mem_valid positions;
    the first u = mlen - mem_valid are unfilled and never attended to. The rule above then
    applies to the filled keys as if the unfilled ones were not there: with j' = j - u, query i
    may attend to key j iff 0 <= j' <= mem_valid + i (and j' >= i with `same_length`), exactly
    the mask of a memory of mem_valid positions.

    Example, qlen = 3, mlen = 2 (1 = may attend):

        same_length=False        same_length=True         mem_valid=1
        keys:  m m s s s         keys:  m m s s s         keys:  m m s s s
        q0     1 1 1 0 0         q0     1 1 1 0 0         q0     0 1 1 0 0
        q1     1 1 1 1 0         q1     0 1 1 1 0         q1     0 1 1 1 0
        q2     1 1 1 1 1         q2     0 0 1 1 1         q2     0 1 1 1 1

    Args:
      qlen: Q, a scalar int (tensor or Python).
      mlen: M, a scalar int (tensor or Python).
      same_length: the reference's same_length.
      mem_valid: None (all M memory positions hold states) or a scalar int tensor in [0, M]:
        how many of the last memory positions hold states.

    Returns:
      bool [qlen, mlen + qlen], True where attention is allowed.
    """
    query = tf.range(qlen)[:, None]
    key = tf.range(mlen + qlen)[None, :]
    if mem_valid is None:
        allowed = key <= query + mlen
    else:
        mem_valid = tf.cast(mem_valid, key.dtype)
        key = key - (mlen - mem_valid)  # position among the filled keys
        allowed = tf.logical_and(key >= 0, key <= query + mem_valid)
    if same_length:
        allowed = tf.logical_and(allowed, key >= query)
    return allowed
