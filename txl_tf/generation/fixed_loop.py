"""The fixed-size loop of generation: `graph_loop.py`'s generation with static shapes, for XLA.

`generate_fixed` is what `Generator(jit_compile=)` and the export's `gen_jit_compile` compile:
a fixed memory [L, B, mem_len, D] whose unfilled positions the model masks
(`txl_tf/layers/memory.py`), the prompt right-padded to a bucket (`buckets.prompt_bucket`; its
last segment padded, `TransformerXL(segment_padding=)`), and the tokens written into a buffer
of static width (`buckets.tokens_bucket`). Its tokens are those of `graph_loop.generate_ids`.

The fixed memory travels as one pair `memory` = (mems float32 [L, B, mem_len, D], valid
int32 []): its last `valid` positions are filled. The settings travel as in `graph_loop.py`:
one `ContextSettings` (Python values) and one `Sampler` (tensors, scalars or one per row).

Example:
  >>> generate_fixed(model, padded, length, num_tokens, 64, sampler, context)  # int32 [B, 64]
"""
import tensorflow as tf

from txl_tf.generation import sampling
from txl_tf.generation.graph_loop import all_stopped, empty_mems, stopped
from txl_tf.layers.memory import fixed_memory_update


def fixed_step(model, tokens, count, memory, context):
    """One forward pass with the fixed memory.

    Args:
      tokens: int32 [B, S] (S static), its first `count` real, the rest padding.
      count: int32 [] or int, 1 <= count <= S.
      memory: (mems float32 [L, B, mem_len, D], valid int32 []), its last `valid` positions
        filled.
      context: the `ContextSettings` (mem_len, clamp_len, same_length).

    Returns:
      (log_probs float32 [B, S, V] (those of the padding meaningless), memory (mems
      [L, B, mem_len, D], valid int32 [])): the log-probabilities and memory of
      `graph_loop.model_step` with the growing memory of the `valid` filled states.
    """
    c = model.config
    mems, valid = memory
    seg = int(tokens.shape[1])
    padding = seg - count if isinstance(count, int) else tf.cast(seg - count, tf.int32)
    out = model(tokens, mems=tf.unstack(mems, num=c.n_layer), training=False,
                mem_len=context.mem_len + seg, clamp_len=context.clamp_len,
                same_length=context.same_length, mem_valid=valid, segment_padding=padding)
    return out["log_probs"], fixed_memory_update(tf.stack(out["mems"]), valid, count,
                                                 context.mem_len)


def consume_prompt_fixed(model, prompt, length, context):
    """`graph_loop.consume_prompt` with the fixed memory: the same segments of
    context.tgt_len (the last one padded), every one of static shape [B, tgt_len].

    Args:
      prompt: int32 [B, P], P a multiple of context.tgt_len; the first `length` tokens are the
        prompt.
      length: int32 [], 1 <= length <= P.

    Returns:
      (log_probs float32 [B, V] of the token after the prompt, memory (mems [L, B, mem_len, D],
      valid int32 [])).
    """
    c = model.config
    seg_len = context.tgt_len
    batch = tf.shape(prompt)[0]
    num_segments = (length + seg_len - 1) // seg_len

    def body(i, _, mems, valid):
        start = i * seg_len
        segment = tf.slice(prompt, tf.stack([0, start]), [-1, seg_len])
        count = tf.minimum(seg_len, length - start)
        log_probs, (mems, valid) = fixed_step(model, segment, count, (mems, valid), context)
        return i + 1, tf.gather(log_probs, count - 1, axis=1), mems, valid

    _, last, mems, valid = tf.while_loop(
        lambda i, *_: i < num_segments, body,
        (tf.constant(0), tf.zeros([batch, c.n_token], tf.float32),
         empty_mems(c, batch, context.mem_len), tf.constant(0)))
    return last, (mems, valid)


def decode_fixed(model, log_probs, memory, num_tokens, max_tokens, sampler, context,
                 stop_ids=None):
    """`graph_loop.decode` with the fixed memory, into a buffer of static width.

    Args:
      log_probs: float32 [B, V] of the next token.
      memory: (mems [L, B, mem_len, D], valid int32 []).
      num_tokens: int32 [], 0 <= num_tokens <= max_tokens.
      max_tokens: the buffer's width, a Python int.
      sampler: the `Sampler` (tensors).
      context: the `ContextSettings`.
      stop_ids: int32 [S] or None, as `graph_loop.decode`'s.

    Returns:
      int32 [B, max_tokens]: the num_tokens tokens of `graph_loop.decode`, then zeros.
    """
    batch = tf.shape(log_probs)[0]
    positions = tf.range(max_tokens)[None, :]
    stop = None if stop_ids is None else tf.cast(stop_ids, tf.int32)
    mems, valid = memory

    def body(t, log_probs, mems, valid, out, done):
        # Every loop variable keeps its static shape (the sampling ops lose the batch's).
        token = tf.ensure_shape(sampling.choose(log_probs, t, sampler), log_probs.shape[:1])
        if stop is not None:
            done = done | stopped(token, stop)
        out = tf.where(positions == t, token[:, None], out)
        step_log_probs, (mems, valid) = fixed_step(model, token[:, None], 1, (mems, valid),
                                                   context)
        return (t + 1, tf.ensure_shape(step_log_probs[:, 0], log_probs.shape), mems, valid,
                out, done)

    t, log_probs, _, _, out, _ = tf.while_loop(
        lambda t, *rest: (t < num_tokens - 1) & ~all_stopped(rest[-1]), body,
        (tf.constant(0), log_probs, mems, valid, tf.zeros([batch, max_tokens], tf.int32),
         tf.zeros_like(log_probs[:, 0], tf.bool)))
    last = sampling.choose(log_probs, t, sampler)
    return tf.where((positions == t) & (t < num_tokens), last[:, None], out)


def generate_fixed(model, prompt, length, num_tokens, max_tokens, sampler, context,
                   stop_ids=None):
    """`graph_loop.generate_ids` with the fixed memory and static shapes, the function XLA
    compiles.

    Args:
      prompt: int32 [B, P] padded (`buckets.prompt_bucket`), its first `length` tokens the
        prompt.
      length: int32 [] >= 1; num_tokens: int32 [] <= max_tokens (a Python int).
      sampler: the `Sampler` (tensors); context: the `ContextSettings` (tgt_len: the
        segment length of the bucket).
      stop_ids: int32 [S] or None (`graph_loop.decode`'s).

    Returns:
      int32 [B, max_tokens]: the tokens of `graph_loop.generate_ids`, then zeros.
    """
    log_probs, memory = consume_prompt_fixed(model, prompt, length, context)
    return decode_fixed(model, log_probs, memory, num_tokens, max_tokens, sampler, context,
                        stop_ids)
