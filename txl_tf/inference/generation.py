"""Text generation with the Transformer-XL memory.

The prompt is consumed in segments of `seg_len` tokens, each attending to the memory of the
previous ones; then every new token costs one forward pass of length 1 against the cached
memory (not a re-run over the whole context). While the whole context fits in `mem_len` and
generation starts from no memory (`mems=None`, the memory grows up to mem_len), the result is
exactly that of re-running the model over the whole context for every token (a test checks it).

Memory here is one stacked tensor float32 [L, B, M, D] (the export's signatures take and give
it batch-major, [B, L, M, D]); M may be 0. The sampling settings are scalars or one per row
([B], see `sampling.choose`).
The graph functions (`consume_prompt`, `generate_ids`) are plain functions of a model, used by
`Generator` (CLI) and by the SavedModel (`txl_tf/inference/serving.py`).
"""
import tensorflow as tf

from txl_tf.inference import sampling
from txl_tf.inference.generation_limits import check_call


def empty_mems(config, batch_size):
    """No memory: float32 [L, B, 0, D]."""
    return tf.zeros([config.n_layer, batch_size, 0, config.d_model], tf.float32)


def model_step(model, tokens, mems, mem_len, clamp_len, same_length):
    """One forward pass: tokens int32 [B, Q], mems [L, B, M, D] ->
    (log_probs float32 [B, Q, V], new mems [L, B, min(mem_len, M + Q), D])."""
    c = model.config
    out = model(tokens, mems=tf.unstack(mems, num=c.n_layer), training=False, mem_len=mem_len,
                clamp_len=clamp_len, same_length=same_length)
    return out["log_probs"], tf.stack(out["mems"])


def _mems_invariant(config):
    return tf.TensorShape([config.n_layer, None, None, config.d_model])


def consume_prompt(model, prompt, mems, seg_len, mem_len, clamp_len, same_length):
    """Runs the prompt int32 [B, P] (P >= 1) in segments of seg_len after `mems` [L, B, M, D].

    Returns (log_probs float32 [B, V] of the token after the prompt, new mems)."""
    c = model.config
    prompt = tf.convert_to_tensor(prompt, tf.int32)
    length = tf.shape(prompt)[1]
    tf.debugging.assert_positive(length, message="the prompt is empty: give at least one token.")
    num_segments = (length + seg_len - 1) // seg_len
    batch = tf.shape(prompt)[0]

    def body(i, _, mems):
        segment = prompt[:, i * seg_len:(i + 1) * seg_len]
        log_probs, mems = model_step(model, segment, mems, mem_len, clamp_len, same_length)
        return i + 1, log_probs[:, -1], mems

    _, last, mems = tf.while_loop(
        lambda i, *_: i < num_segments, body,
        (tf.constant(0), tf.zeros([batch, c.n_token], tf.float32), mems),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, c.n_token]),
                          _mems_invariant(c)))
    return last, mems


def decode(model, log_probs, mems, num_tokens, temperature, top_k, top_p, seed, mem_len,
           clamp_len, same_length):
    """Generates num_tokens tokens from the next-token log_probs [B, V] and the memory.

    Token t is `sampling.choose(..., step=t)`; tokens 0 .. n-2 are each fed back with one
    forward pass of length 1 (the last one needs none). Returns (int32 [B, num_tokens], mems).
    """
    c = model.config
    num_tokens = tf.cast(num_tokens, tf.int32)
    tf.debugging.assert_non_negative(num_tokens, message="num_tokens must be >= 0.")
    batch = tf.shape(log_probs)[0]

    def body(t, log_probs, mems, out):
        token = sampling.choose(log_probs, t, temperature, top_k, top_p, seed)
        step_log_probs, mems = model_step(model, token[:, None], mems, mem_len, clamp_len,
                                          same_length)
        return t + 1, step_log_probs[:, 0], mems, tf.concat([out, token[:, None]], axis=1)

    t, log_probs, mems, out = tf.while_loop(
        lambda t, *_: t < num_tokens - 1, body,
        (tf.constant(0), log_probs, mems, tf.zeros([batch, 0], tf.int32)),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, c.n_token]),
                          _mems_invariant(c), tf.TensorShape([None, None])))
    last = sampling.choose(log_probs, t, temperature, top_k, top_p, seed)
    generated = tf.concat([out, last[:, None]], axis=1)
    return generated[:, :num_tokens], mems


def generate_ids(model, prompt, num_tokens, temperature, top_k, top_p, seed, seg_len, mem_len,
                 clamp_len, same_length, mems=None):
    """Prompt int32 [B, P] -> generated int32 [B, num_tokens] (see the module docstring)."""
    prompt = tf.convert_to_tensor(prompt, tf.int32)
    if mems is None:
        mems = empty_mems(model.config, tf.shape(prompt)[0])
    log_probs, mems = consume_prompt(model, prompt, mems, seg_len, mem_len, clamp_len,
                                     same_length)
    generated, _ = decode(model, log_probs, mems, num_tokens, temperature, top_k, top_p, seed,
                          mem_len, clamp_len, same_length)
    return generated


class Generator:
    """Cached generation for a `TransformerXL` of any attention variant, through its memory.

    The prompt is read in segments carrying the memory, then every new token is one call of
    length 1 against it: the model's own semantics with memory. For relative encodings that
    equals rerunning the model over the whole text (distances are the same either way); for
    absolute ones (`TransformerXL.absolute_positions`) it does not, since their positions
    restart in every call.

    Args:
      model: the model (dropout is off: training=False).
      seg_len: prompt segment length (default the model's tgt_len).
      mem_len: memory length (default the model's); the context that fits in it is exact.
      clamp_len: default the model's.
      same_length: default False (with a growing memory, same_length would hide context).
    """

    def __init__(self, model, seg_len=None, mem_len=None, clamp_len=None, same_length=False):
        c = model.config
        self.model = model
        self.seg_len = int(seg_len or c.tgt_len)
        self.mem_len = int(c.mem_len if mem_len is None else mem_len)
        if self.mem_len < 1:
            raise ValueError("generation needs mem_len >= 1 to cache the context.")
        self.clamp_len = int(c.clamp_len if clamp_len is None else clamp_len)
        self.same_length = bool(same_length)
        mems_spec = tf.TensorSpec([c.n_layer, None, None, c.d_model], tf.float32)
        settings = (self.mem_len, self.clamp_len, self.same_length)
        self.consume = tf.function(
            lambda prompt, mems: consume_prompt(model, prompt, mems, self.seg_len, *settings),
            input_signature=[tf.TensorSpec([None, None], tf.int32), mems_spec])
        self.step = tf.function(
            lambda tokens, mems: model_step(model, tokens, mems, *settings),
            input_signature=[tf.TensorSpec([None, None], tf.int32), mems_spec])
        scalar = tf.TensorSpec([], tf.float32)
        self.choose = tf.function(
            sampling.choose,
            input_signature=[tf.TensorSpec([None, c.n_token], tf.float32),
                             tf.TensorSpec([], tf.int32), scalar, tf.TensorSpec([], tf.int32),
                             scalar, tf.TensorSpec([], tf.int64)])
        self._generate = tf.function(
            lambda prompt, n, temperature, top_k, top_p, seed: generate_ids(
                model, prompt, n, temperature, top_k, top_p, seed, self.seg_len, *settings),
            input_signature=[tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([], tf.int32),
                             scalar, tf.TensorSpec([], tf.int32), scalar,
                             tf.TensorSpec([], tf.int64)])

    @staticmethod
    def _settings(temperature, top_k, top_p, seed):
        return (tf.constant(temperature, tf.float32), tf.constant(top_k, tf.int32),
                tf.constant(top_p, tf.float32), tf.constant(seed, tf.int64))

    def generate(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0, seed=0):
        """All tokens in one graph call (a tf.while_loop): int32 numpy [B, num_tokens]."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        prompt = tf.convert_to_tensor(prompt, tf.int32)
        return self._generate(prompt, tf.constant(num_tokens, tf.int32),
                              *self._settings(temperature, top_k, top_p, seed)).numpy()

    def stream(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0, seed=0):
        """Yields int32 numpy [B] token by token (same tokens as `generate`)."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        prompt = tf.convert_to_tensor(prompt, tf.int32)
        temperature, top_k, top_p, seed = self._settings(temperature, top_k, top_p, seed)
        log_probs, mems = self.consume(prompt, empty_mems(self.model.config,
                                                          tf.shape(prompt)[0]))
        for t in range(num_tokens):
            token = self.choose(log_probs, tf.constant(t), temperature, top_k, top_p, seed)
            yield token.numpy()
            if t < num_tokens - 1:
                step_log_probs, mems = self.step(token[:, None], mems)
                log_probs = step_log_probs[:, 0]

    def generate_uncached(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0,
                          seed=0):
        """Baseline without the memory: re-runs the model over the whole context (no memory)
        for every new token. int32 numpy [B, num_tokens]."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        context = tf.convert_to_tensor(prompt, tf.int32)
        settings = self._settings(temperature, top_k, top_p, seed)
        if getattr(self, "_rerun", None) is None:
            self._rerun = tf.function(lambda tokens: self.model(
                tokens, mems=None, training=False, mem_len=self.mem_len,
                clamp_len=self.clamp_len, same_length=self.same_length)["log_probs"][:, -1],
                input_signature=[tf.TensorSpec([None, None], tf.int32)])
        run = self._rerun
        out = []
        for t in range(num_tokens):
            token = self.choose(run(context), tf.constant(t), *settings)
            out.append(token.numpy())
            context = tf.concat([context, token[:, None]], axis=1)
        return tf.stack(out, axis=1).numpy() if out else tf.zeros(
            [context.shape[0], 0], tf.int32).numpy()
