"""The graph loop of generation: the prompt in segments with memory, then one token per pass.

The prompt is consumed in segments of `context.tgt_len` tokens, each attending to the memory of
the previous ones; then every new token costs one forward pass of length 1 against the cached
memory (not a re-run over the whole context). While the whole context fits in mem_len and
generation starts from no memory (`mems=None`, the memory grows up to mem_len), the result is
exactly that of re-running the model over the whole context for every token (a test checks it).

Memory here is one stacked tensor float32 [L, B, M, D] (the export's signatures take and give
it batch-major, [B, L, M, D]); M may be 0. The settings travel typed: the memory settings as
one `ContextSettings` (tgt_len: the prompt's segment length; mem_len, clamp_len, same_length:
the model call's), Python values; the sampling settings as one `Sampler`, whose fields may be
tensors here, scalars or one per row ([B], see `sampling.choose`).
These are plain functions of a model, used by `Generator` (generator.py) and by the SavedModel
(`txl_tf/serving/module.py`); `fixed_loop.py` is the same generation with static shapes, for
XLA.

Stop tokens (`stop_ids`, int32 [S]): the loop ends early once every row has generated one of
them (keras-hub's rule); the tokens a row generates after its own stop token, and the positions
the loop never reached (zeros), are for the caller to mask (`stop_tokens.py`).
Without `stop_ids` the loop runs its whole length.

Example:
  >>> context = ContextSettings(tgt_len=4, mem_len=12, clamp_len=-1, same_length=False)
  >>> generate_ids(model, prompt, 8, Sampler(temperature=tf.constant(0.0), ...), context)
"""
import numpy as np
import tensorflow as tf

from txl_tf.generation import sampling


def empty_mems(config, batch_size, mem_len=0):
    """No memory: float32 zeros [L, B, mem_len, D] (mem_len > 0: an empty fixed memory, none
    of it filled)."""
    return tf.zeros([config.n_layer, batch_size, mem_len, config.d_model], tf.float32)


def model_step(model, tokens, mems, context):
    """One forward pass: tokens int32 [B, Q], mems [L, B, M, D] ->
    (log_probs float32 [B, Q, V], new mems [L, B, min(mem_len, M + Q), D]), with the
    `ContextSettings` `context`'s mem_len, clamp_len and same_length."""
    c = model.config
    out = model(tokens, mems=tf.unstack(mems, num=c.n_layer), training=False,
                mem_len=context.mem_len, clamp_len=context.clamp_len,
                same_length=context.same_length)
    return out["log_probs"], tf.stack(out["mems"])


def _mems_invariant(config):
    return tf.TensorShape([config.n_layer, None, None, config.d_model])


def consume_prompt(model, prompt, mems, context):
    """Runs the prompt int32 [B, P] (P >= 1) in segments of context.tgt_len after `mems`
    [L, B, M, D].

    Returns (log_probs float32 [B, V] of the token after the prompt, new mems)."""
    c = model.config
    seg_len = context.tgt_len
    prompt = tf.convert_to_tensor(prompt, tf.int32)
    length = tf.shape(prompt)[1]
    tf.debugging.assert_positive(length, message="the prompt is empty: give at least one token.")
    num_segments = (length + seg_len - 1) // seg_len
    batch = tf.shape(prompt)[0]

    def body(i, _, mems):
        segment = prompt[:, i * seg_len:(i + 1) * seg_len]
        log_probs, mems = model_step(model, segment, mems, context)
        return i + 1, log_probs[:, -1], mems

    _, last, mems = tf.while_loop(
        lambda i, *_: i < num_segments, body,
        (tf.constant(0), tf.zeros([batch, c.n_token], tf.float32), mems),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, c.n_token]),
                          _mems_invariant(c)))
    return last, mems


def stopped(token, stop_ids):
    """bool [B]: whether token int32 [B] is one of stop_ids int32 [S]."""
    return tf.reduce_any(tf.equal(token[:, None], stop_ids[None, :]), axis=1)


def all_stopped(done):
    """The loops' condition on `done` bool [B] (no rows: not stopped)."""
    return tf.reduce_all(done) & (tf.size(done) > 0)


def stop_tensor(stop_ids):
    """int32 [S] of a sequence of token ids (S may be 0: no stop token)."""
    return tf.constant(np.asarray(list(stop_ids or ()), np.int32).reshape([-1]), tf.int32)


def decode(model, log_probs, mems, num_tokens, sampler, context, stop_ids=None):
    """Generates num_tokens tokens from the next-token log_probs [B, V] and the memory.

    Token t is `sampling.choose(log_probs, t, sampler)`; tokens 0 .. n-2 are each fed back
    with one forward pass of length 1 (the last one needs none). With `stop_ids` int32 [S] the
    loop ends once every row has generated one of them; the columns it never reached are
    zeros. Returns (int32 [B, num_tokens], mems).
    """
    c = model.config
    num_tokens = tf.cast(num_tokens, tf.int32)
    tf.debugging.assert_non_negative(num_tokens, message="num_tokens must be >= 0.")
    batch = tf.shape(log_probs)[0]
    stop = None if stop_ids is None else tf.cast(stop_ids, tf.int32)

    def body(t, log_probs, mems, out, done):
        token = sampling.choose(log_probs, t, sampler)
        if stop is not None:
            done = done | stopped(token, stop)
        step_log_probs, mems = model_step(model, token[:, None], mems, context)
        return (t + 1, step_log_probs[:, 0], mems, tf.concat([out, token[:, None]], axis=1),
                done)

    t, log_probs, mems, out, done = tf.while_loop(
        lambda t, *rest: (t < num_tokens - 1) & ~all_stopped(rest[-1]), body,
        (tf.constant(0), log_probs, mems, tf.zeros([batch, 0], tf.int32),
         tf.zeros_like(log_probs[:, 0], tf.bool)),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, c.n_token]),
                          _mems_invariant(c), tf.TensorShape([None, None]),
                          tf.TensorShape([None])))
    last = sampling.choose(log_probs, t, sampler)
    generated = tf.concat([out, last[:, None]], axis=1)
    unreached = tf.maximum(num_tokens - tf.shape(generated)[1], 0)
    generated = tf.pad(generated, [[0, 0], [0, unreached]])
    return generated[:, :num_tokens], mems


def generate_ids(model, prompt, num_tokens, sampler, context, mems=None, stop_ids=None):
    """Prompt int32 [B, P] -> generated int32 [B, num_tokens] (see the module docstring;
    `stop_ids`: `decode`'s)."""
    prompt = tf.convert_to_tensor(prompt, tf.int32)
    if mems is None:
        mems = empty_mems(model.config, tf.shape(prompt)[0])
    log_probs, mems = consume_prompt(model, prompt, mems, context)
    generated, _ = decode(model, log_probs, mems, num_tokens, sampler, context, stop_ids)
    return generated
