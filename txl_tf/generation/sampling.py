"""Choosing the next token from log-probabilities: temperature, top-k, top-p, seeded.

All functions are graph-safe (settings may be tensors, a scalar for every row or one value per
row), so the same code runs in the CLI's decode step and inside the exported SavedModel.
`choose` takes the settings as one `Sampler` (sampler.py) whose fields are those tensors.
Randomness is stateless and per row: token t of a row with seed s uses the seed pair (s, t), so
a row's generation is a pure function of its own inputs, whatever rows share its batch, and
the same whether XLA compiles it or not (`uniform`, `sample`).
"""
import tensorflow as tf


def setting_checks(temperature, top_k, top_p) -> list:
    """Assertions that the sampling settings are valid (graph-safe; run them before sampling).

    Args:
      temperature: float, scalar or [B]; finite and >= 0 (0: greedy).
      top_k: int, scalar or [B]; >= 0 (0: no top-k filter).
      top_p: float, scalar or [B]; 0 < top_p <= 1 (1: no nucleus filter).

    Returns:
      A list of assertion ops (in eager mode they have run already) that raise
      InvalidArgumentError naming the setting.

    Example:
      with tf.control_dependencies(setting_checks(t, k, p)):
          token = choose(log_probs, step, Sampler(t, k, p, seed))
    """
    temperature = tf.cast(temperature, tf.float32)
    top_p = tf.cast(top_p, tf.float32)
    return [
        tf.debugging.Assert(
            tf.reduce_all(tf.math.is_finite(temperature) & (temperature >= 0.0)),
            ["temperature must be a finite number >= 0 (0: greedy), got", temperature]),
        tf.debugging.Assert(tf.reduce_all(tf.cast(top_k, tf.int64) >= 0),
                            ["top_k must be >= 0 (0: no top-k filter), got", top_k]),
        tf.debugging.Assert(tf.reduce_all((top_p > 0.0) & (top_p <= 1.0)),
                            ["top_p must be in (0, 1] (1: no nucleus filter), got", top_p]),
    ]


def per_row(value, batch, dtype):
    """A setting as one value per row: a scalar or [B] -> dtype [B]."""
    return tf.broadcast_to(tf.cast(value, dtype), tf.reshape(batch, [1]))


def filter_logits(log_probs, temperature, top_k, top_p):
    """Scaled and truncated logits, each row with its own settings.

    Args:
      log_probs: float [B, V].
      temperature: scalar or [B]; > 0 (values <= 0 are treated as 1 here; `choose` makes
        those rows greedy).
      top_k: int scalar or [B]; keep the k most likely tokens (0 or >= V: all).
      top_p: float scalar or [B] in (0, 1]; keep the smallest set of most likely tokens whose
        probability reaches top_p (1.0: all). Ties at a threshold are all kept.

    Returns:
      float32 [B, V] logits with the removed tokens at -inf.
    """
    logits = tf.cast(log_probs, tf.float32)
    batch, vocab = tf.shape(logits)[0], tf.shape(logits)[1]
    temperature = per_row(temperature, batch, tf.float32)
    logits = logits / tf.where(temperature > 0, temperature, 1.0)[:, None]
    ranked = tf.sort(logits, axis=-1, direction="DESCENDING")

    top_k = per_row(top_k, batch, tf.int32)
    top_k = tf.where((top_k > 0) & (top_k < vocab), top_k, vocab)
    kth = tf.gather(ranked, top_k - 1, batch_dims=1)[:, None]
    logits = tf.where(logits < kth, float("-inf"), logits)
    ranked = tf.where(ranked < kth, float("-inf"), ranked)

    top_p = per_row(top_p, batch, tf.float32)[:, None]
    probs = tf.nn.softmax(ranked, axis=-1)
    before = tf.cumsum(probs, axis=-1, exclusive=True)  # mass of the strictly more likely
    keep = (before < top_p) | (top_p >= 1.0)
    keep = tf.concat([tf.ones_like(keep[:, :1]), keep[:, 1:]], axis=-1)
    threshold = tf.reduce_min(tf.where(keep, ranked, float("inf")), axis=-1, keepdims=True)
    return tf.where(logits < threshold, float("-inf"), logits)


def uniform(seed, step):
    """One uniform number in (0, 1) per row from the stateless seed pair (seed, step).

    Philox's raw bits (`tf.random.stateless_uniform` of uint32) are the same with and without
    XLA; its float numbers are not (XLA converts the bits differently), so the bits are turned
    into a float here, with integer arithmetic: the top 24 bits, centred, times 2**-24.

    Args:
      seed: int64 [B]; step: int64 [B].

    Returns:
      float32 [B], every entry in [2**-25, 1 - 2**-25].
    """
    bits = tf.map_fn(
        lambda pair: tf.random.stateless_uniform([], seed=pair, minval=None, maxval=None,
                                                 dtype=tf.uint32, alg="philox"),
        tf.stack([seed, step], axis=1), fn_output_signature=tf.uint32)
    top = tf.cast(tf.bitwise.right_shift(bits, tf.constant(8, tf.uint32)), tf.float32)
    return (top + 0.5) * (2.0 ** -24)


def sample(logits, u):
    """Inverse-CDF sampling: the first token whose cumulative probability exceeds u.

    Args:
      logits: float32 [B, V], removed tokens at -inf.
      u: float32 [B] in (0, 1).

    Returns:
      int32 [B]: a token of positive probability (the last such token when rounding leaves
      u * total at the top of the cumulative sum).
    """
    probs = tf.nn.softmax(logits, axis=-1)
    cdf = tf.cumsum(probs, axis=-1)
    possible = probs > 0.0
    above = (cdf > (u * cdf[:, -1])[:, None]) & possible
    first = tf.argmax(tf.cast(above, tf.int32), axis=-1, output_type=tf.int32)
    vocab = tf.shape(logits)[1]
    last = vocab - 1 - tf.argmax(tf.cast(tf.reverse(possible, [1]), tf.int32), axis=-1,
                                 output_type=tf.int32)
    return tf.where(tf.reduce_any(above, axis=-1), first, last)


def choose(log_probs, step, sampler):
    """The next token of every row: int32 [B].

    Args:
      log_probs: float [B, V].
      step: int [] or [B], the token's index t in the generation.
      sampler: a `Sampler`, of Python numbers or of tensors each a scalar or one value per
        row ([B]).

    A row with temperature <= 0 is greedy (argmax, first on ties); any other row is a sample
    from its filtered distribution (`sample`) with the uniform number of the stateless seed
    (its seed, step) (`uniform`), drawn for that row alone, so that a row's token does not
    depend on the other rows of the batch, and the same with and without XLA.
    """
    batch = tf.shape(log_probs)[0]
    temperature = per_row(sampler.temperature, batch, tf.float32)
    greedy = tf.argmax(log_probs, axis=-1, output_type=tf.int32)

    def sampled():
        logits = filter_logits(log_probs, temperature, sampler.top_k, sampler.top_p)
        return sample(logits, uniform(per_row(sampler.seed, batch, tf.int64),
                                      per_row(step, batch, tf.int64)))

    chosen = tf.cond(tf.reduce_any(temperature > 0), sampled, lambda: greedy)
    return tf.where(temperature > 0, chosen, greedy)
