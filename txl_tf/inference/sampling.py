"""Choosing the next token from log-probabilities: temperature, top-k, top-p, seeded.

All functions are graph-safe (settings may be tensors), so the same code runs in the CLI's
decode step and inside the exported SavedModel. Randomness is stateless: token t of a call
with seed s uses the seed pair (s, t), so a generation is a pure function of its inputs.
"""
import tensorflow as tf


def setting_checks(temperature, top_k, top_p) -> list:
    """Assertions that the sampling settings are valid (graph-safe; run them before sampling).

    Args:
      temperature: scalar float; finite and >= 0 (0: greedy).
      top_k: scalar int; >= 0 (0: no top-k filter).
      top_p: scalar float; 0 < top_p <= 1 (1: no nucleus filter).

    Returns:
      A list of assertion ops (in eager mode they have run already) that raise
      InvalidArgumentError naming the setting.

    Example:
      with tf.control_dependencies(setting_checks(t, k, p)):
          token = choose(log_probs, step, t, k, p, seed)
    """
    temperature = tf.cast(temperature, tf.float32)
    top_p = tf.cast(top_p, tf.float32)
    return [
        tf.debugging.Assert(tf.math.is_finite(temperature) & (temperature >= 0.0),
                            ["temperature must be a finite number >= 0 (0: greedy), got",
                             temperature]),
        tf.debugging.Assert(tf.cast(top_k, tf.int64) >= 0,
                            ["top_k must be >= 0 (0: no top-k filter), got", top_k]),
        tf.debugging.Assert((top_p > 0.0) & (top_p <= 1.0),
                            ["top_p must be in (0, 1] (1: no nucleus filter), got", top_p]),
    ]


def filter_logits(log_probs, temperature, top_k, top_p):
    """Scaled and truncated logits.

    Args:
      log_probs: float [B, V].
      temperature: scalar > 0 (values <= 0 are treated as 1 here; `choose` makes them greedy).
      top_k: scalar int; keep the k most likely tokens (0 or >= V: all).
      top_p: scalar float in (0, 1]; keep the smallest set of most likely tokens whose
        probability reaches top_p (1.0: all). Ties at a threshold are all kept.

    Returns:
      float32 [B, V] logits with the removed tokens at -inf.
    """
    logits = tf.cast(log_probs, tf.float32)
    temperature = tf.cast(temperature, tf.float32)
    logits = logits / tf.where(temperature > 0, temperature, 1.0)
    vocab = tf.shape(logits)[-1]

    top_k = tf.cast(top_k, tf.int32)
    logits = tf.cond((top_k > 0) & (top_k < vocab),
                     lambda: _keep_top_k(logits, top_k), lambda: logits)
    top_p = tf.cast(top_p, tf.float32)
    return tf.cond(top_p < 1.0, lambda: _keep_top_p(logits, top_p), lambda: logits)


def _keep_top_k(logits, k):
    kth = tf.math.top_k(logits, k=k).values[:, -1:]
    return tf.where(logits < kth, float("-inf"), logits)


def _keep_top_p(logits, top_p):
    sorted_logits = tf.sort(logits, axis=-1, direction="DESCENDING")
    probs = tf.nn.softmax(sorted_logits, axis=-1)
    before = tf.cumsum(probs, axis=-1, exclusive=True)  # mass of the strictly more likely
    keep = before < top_p
    keep = tf.concat([tf.ones_like(keep[:, :1]), keep[:, 1:]], axis=-1)
    threshold = tf.reduce_min(tf.where(keep, sorted_logits, float("inf")), axis=-1,
                              keepdims=True)
    return tf.where(logits < threshold, float("-inf"), logits)


def choose(log_probs, step, temperature, top_k, top_p, seed):
    """The next token of every row: int32 [B].

    temperature <= 0 is greedy (argmax, first on ties); otherwise a sample from the filtered
    distribution with the stateless seed (seed, step).
    """
    temperature = tf.cast(temperature, tf.float32)

    def sample():
        logits = filter_logits(log_probs, temperature, top_k, top_p)
        seeds = tf.stack([tf.cast(seed, tf.int64), tf.cast(step, tf.int64)])
        return tf.cast(tf.random.stateless_categorical(logits, 1, seed=seeds)[:, 0], tf.int32)

    return tf.cond(temperature > 0, sample,
                   lambda: tf.argmax(log_probs, axis=-1, output_type=tf.int32))
