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
`Generator` (CLI) and by the SavedModel (`txl_tf/serving/module.py`).

`generate_fixed` is the same generation with static shapes, for XLA (`Generator(jit_compile=)`,
the export's `gen_jit_compile`): a fixed memory [L, B, mem_len, D] whose unfilled positions the
model masks (`txl_tf/layers/memory.py`), the prompt right-padded to a bucket (`prompt_bucket`;
its last segment padded, `TransformerXL(segment_padding=)`), and the tokens written into a
buffer of static width. Its tokens are those of `generate_ids`.

Stop tokens (`stop_ids`, int32 [S]): both loops end early once every row has generated one of
them (keras-hub's rule); the tokens a row generates after its own stop token, and the positions
the loop never reached (zeros), are for the caller to mask (`txl_tf.causal_lm.stop_tokens`).
Without `stop_ids` the loops run their whole length, as before.
"""
import numpy as np
import tensorflow as tf

from txl_tf.inference import sampling
from txl_tf.inference.generation_limits import check_call, check_settings
from txl_tf.model.memory_estimate import check_step_fits
from txl_tf.layers.memory import fixed_memory_update
from txl_tf.devices.step_compilation import choose_generation


def empty_mems(config, batch_size, mem_len=0):
    """No memory: float32 zeros [L, B, mem_len, D] (mem_len > 0: an empty fixed memory, none
    of it filled)."""
    return tf.zeros([config.n_layer, batch_size, mem_len, config.d_model], tf.float32)


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


def _stopped(token, stop_ids):
    """bool [B]: whether token int32 [B] is one of stop_ids int32 [S]."""
    return tf.reduce_any(tf.equal(token[:, None], stop_ids[None, :]), axis=1)


def _all_stopped(done):
    """The loop's condition on `done` bool [B] (no rows: not stopped)."""
    return tf.reduce_all(done) & (tf.size(done) > 0)


def decode(model, log_probs, mems, num_tokens, temperature, top_k, top_p, seed, mem_len,
           clamp_len, same_length, stop_ids=None):
    """Generates num_tokens tokens from the next-token log_probs [B, V] and the memory.

    Token t is `sampling.choose(..., step=t)`; tokens 0 .. n-2 are each fed back with one
    forward pass of length 1 (the last one needs none). With `stop_ids` int32 [S] the loop
    ends once every row has generated one of them; the columns it never reached are zeros.
    Returns (int32 [B, num_tokens], mems).
    """
    c = model.config
    num_tokens = tf.cast(num_tokens, tf.int32)
    tf.debugging.assert_non_negative(num_tokens, message="num_tokens must be >= 0.")
    batch = tf.shape(log_probs)[0]
    stop = None if stop_ids is None else tf.cast(stop_ids, tf.int32)

    def body(t, log_probs, mems, out, done):
        token = sampling.choose(log_probs, t, temperature, top_k, top_p, seed)
        if stop is not None:
            done = done | _stopped(token, stop)
        step_log_probs, mems = model_step(model, token[:, None], mems, mem_len, clamp_len,
                                          same_length)
        return (t + 1, step_log_probs[:, 0], mems, tf.concat([out, token[:, None]], axis=1),
                done)

    t, log_probs, mems, out, done = tf.while_loop(
        lambda t, *rest: (t < num_tokens - 1) & ~_all_stopped(rest[-1]), body,
        (tf.constant(0), log_probs, mems, tf.zeros([batch, 0], tf.int32),
         tf.zeros_like(log_probs[:, 0], tf.bool)),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, c.n_token]),
                          _mems_invariant(c), tf.TensorShape([None, None]),
                          tf.TensorShape([None])))
    last = sampling.choose(log_probs, t, temperature, top_k, top_p, seed)
    generated = tf.concat([out, last[:, None]], axis=1)
    unreached = tf.maximum(num_tokens - tf.shape(generated)[1], 0)
    generated = tf.pad(generated, [[0, 0], [0, unreached]])
    return generated[:, :num_tokens], mems


def generate_ids(model, prompt, num_tokens, temperature, top_k, top_p, seed, seg_len, mem_len,
                 clamp_len, same_length, mems=None, stop_ids=None):
    """Prompt int32 [B, P] -> generated int32 [B, num_tokens] (see the module docstring;
    `stop_ids`: `decode`'s)."""
    prompt = tf.convert_to_tensor(prompt, tf.int32)
    if mems is None:
        mems = empty_mems(model.config, tf.shape(prompt)[0])
    log_probs, mems = consume_prompt(model, prompt, mems, seg_len, mem_len, clamp_len,
                                     same_length)
    generated, _ = decode(model, log_probs, mems, num_tokens, temperature, top_k, top_p, seed,
                          mem_len, clamp_len, same_length, stop_ids)
    return generated


# -- the fixed memory: static shapes, for XLA ----------------------------------------------


def next_power_of_two(n: int) -> int:
    """The least power of two >= n (1 for n <= 1)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def prompt_bucket(length: int, seg_len: int):
    """(segment length, padded prompt length) of a compiled generation.

    A prompt of `length` <= seg_len tokens is one segment either way; it is right-padded to the
    next power of two, read as one segment of that length (or segments of seg_len, when seg_len
    is no power of two and shorter). A longer one keeps the segments of seg_len
    and is right-padded to a power of two of them: seg_len * 2**ceil(log2(ceil(length /
    seg_len))). With seg_len 128: 16 -> (16, 16), 100 -> (128, 128), 300 -> (128, 512). The
    prompts of one bucket share a compilation, and none pays for more than twice its length.
    """
    length = int(length)
    if length <= seg_len:
        padded = next_power_of_two(length)
        return min(seg_len, padded), padded
    return seg_len, seg_len * next_power_of_two(-(-length // seg_len))


def check_generation_fits(config, prompt_tokens: int, num_tokens: int, seg_len=None,
                          mem_len=None, compiled: bool = False, batch: int = 1,
                          names=None, available=None) -> None:
    """Raises `MemoryEstimateError` when the largest step of a generation cannot fit in this
    machine's memory, for the path that will run, before anything is built.

    Args:
      config: the model configuration.
      prompt_tokens: P, the longest prompt (an upper bound: its characters).
      num_tokens: tokens to generate.
      seg_len, mem_len: the generation's settings (None: the model's tgt_len and mem_len).
      compiled: the XLA program (a fixed-size memory of mem_len, the prompt padded to its
        bucket, `prompt_bucket`) instead of the graph loop (segments of at most P tokens, a
        memory growing to P + num_tokens).
      batch: B, prompts generated together.
      names: how the fix names the settings (default {"tgt_len": "--seg_len", "mem_len":
        "--mem_len", "batch": "fewer prompts at once"}).
      available: bytes to compare with (default: this machine's memory).
    """
    seg = config.tgt_len if seg_len is None else seg_len
    mem = config.mem_len if mem_len is None else mem_len
    length = max(int(prompt_tokens), 1)
    if compiled:
        q, m, path = prompt_bucket(length, seg)[0], mem, "compiled generation"
    else:
        q, m, path = min(seg, length), min(mem, length + max(num_tokens, 0)), "generation"
    names = names or {"tgt_len": "--seg_len", "mem_len": "--mem_len",
                      "batch": "fewer prompts at once"}
    check_step_fits(config, batch, tgt_len=q, mem_len=m, names=names, path=path,
                    available=available)


def tokens_bucket(num_tokens: int) -> int:
    """The output buffer of a compiled generation: num_tokens rounded up to a power of two."""
    return next_power_of_two(num_tokens)


def fixed_step(model, tokens, count, mems, valid, mem_len, clamp_len, same_length):
    """One forward pass with the fixed memory.

    Args:
      tokens: int32 [B, S] (S static), its first `count` real, the rest padding.
      count: int32 [] or int, 1 <= count <= S.
      mems: float32 [L, B, mem_len, D], its last `valid` positions filled.
      valid: int32 [].

    Returns:
      (log_probs float32 [B, S, V] (those of the padding meaningless), mems [L, B, mem_len, D],
      valid int32 []): the log-probabilities and memory of `model_step` with the growing memory
      of the `valid` filled states.
    """
    c = model.config
    seg = int(tokens.shape[1])
    padding = seg - count if isinstance(count, int) else tf.cast(seg - count, tf.int32)
    out = model(tokens, mems=tf.unstack(mems, num=c.n_layer), training=False,
                mem_len=mem_len + seg, clamp_len=clamp_len, same_length=same_length,
                mem_valid=valid, segment_padding=padding)
    mems, valid = fixed_memory_update(tf.stack(out["mems"]), valid, count, mem_len)
    return out["log_probs"], mems, valid


def consume_prompt_fixed(model, prompt, length, seg_len, mem_len, clamp_len, same_length):
    """`consume_prompt` with the fixed memory: the same segments of seg_len (the last one
    padded), every one of static shape [B, seg_len].

    Args:
      prompt: int32 [B, P], P a multiple of seg_len; the first `length` tokens are the prompt.
      length: int32 [], 1 <= length <= P.

    Returns:
      (log_probs float32 [B, V] of the token after the prompt, mems [L, B, mem_len, D],
      valid int32 []).
    """
    c = model.config
    batch = tf.shape(prompt)[0]
    num_segments = (length + seg_len - 1) // seg_len

    def body(i, _, mems, valid):
        start = i * seg_len
        segment = tf.slice(prompt, tf.stack([0, start]), [-1, seg_len])
        count = tf.minimum(seg_len, length - start)
        log_probs, mems, valid = fixed_step(model, segment, count, mems, valid, mem_len,
                                            clamp_len, same_length)
        return i + 1, tf.gather(log_probs, count - 1, axis=1), mems, valid

    _, last, mems, valid = tf.while_loop(
        lambda i, *_: i < num_segments, body,
        (tf.constant(0), tf.zeros([batch, c.n_token], tf.float32),
         empty_mems(c, batch, mem_len), tf.constant(0)))
    return last, mems, valid


def decode_fixed(model, log_probs, mems, valid, num_tokens, max_tokens, temperature, top_k,
                 top_p, seed, mem_len, clamp_len, same_length, stop_ids=None):
    """`decode` with the fixed memory, into a buffer of static width.

    Args:
      num_tokens: int32 [], 0 <= num_tokens <= max_tokens.
      max_tokens: the buffer's width, a Python int.
      stop_ids: int32 [S] or None, as `decode`'s.

    Returns:
      int32 [B, max_tokens]: the num_tokens tokens of `decode`, then zeros.
    """
    batch = tf.shape(log_probs)[0]
    positions = tf.range(max_tokens)[None, :]
    stop = None if stop_ids is None else tf.cast(stop_ids, tf.int32)

    def body(t, log_probs, mems, valid, out, done):
        # Every loop variable keeps its static shape (the sampling ops lose the batch's).
        token = tf.ensure_shape(sampling.choose(log_probs, t, temperature, top_k, top_p, seed),
                                log_probs.shape[:1])
        if stop is not None:
            done = done | _stopped(token, stop)
        out = tf.where(positions == t, token[:, None], out)
        step_log_probs, mems, valid = fixed_step(model, token[:, None], 1, mems, valid,
                                                 mem_len, clamp_len, same_length)
        return (t + 1, tf.ensure_shape(step_log_probs[:, 0], log_probs.shape), mems, valid,
                out, done)

    t, log_probs, _, _, out, _ = tf.while_loop(
        lambda t, *rest: (t < num_tokens - 1) & ~_all_stopped(rest[-1]), body,
        (tf.constant(0), log_probs, mems, valid, tf.zeros([batch, max_tokens], tf.int32),
         tf.zeros_like(log_probs[:, 0], tf.bool)))
    last = sampling.choose(log_probs, t, temperature, top_k, top_p, seed)
    return tf.where((positions == t) & (t < num_tokens), last[:, None], out)


def generate_fixed(model, prompt, length, num_tokens, max_tokens, temperature, top_k, top_p,
                   seed, seg_len, mem_len, clamp_len, same_length, stop_ids=None):
    """`generate_ids` with the fixed memory and static shapes, the function XLA compiles.

    Args:
      prompt: int32 [B, P] padded (`prompt_bucket`), its first `length` tokens the prompt.
      length: int32 [] >= 1; num_tokens: int32 [] <= max_tokens (a Python int).
      stop_ids: int32 [S] or None (`decode`'s).

    Returns:
      int32 [B, max_tokens]: the tokens of `generate_ids`, then zeros.
    """
    log_probs, mems, valid = consume_prompt_fixed(model, prompt, length, seg_len, mem_len,
                                                  clamp_len, same_length)
    return decode_fixed(model, log_probs, mems, valid, num_tokens, max_tokens, temperature,
                        top_k, top_p, seed, mem_len, clamp_len, same_length, stop_ids)


def _stop_tensor(stop_ids):
    """int32 [S] of a sequence of token ids (S may be 0: no stop token)."""
    return tf.constant(np.asarray(list(stop_ids or ()), np.int32).reshape([-1]), tf.int32)


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
      jit_compile: whether `generate` runs as one XLA program (`generate_fixed`: the fixed
        memory, the prompt padded to `prompt_bucket`, the output to `tokens_bucket`; one
        compilation per batch size, prompt bucket and output bucket) instead of the graph loop
        with the growing memory (`generate_ids`). The tokens are the same. `stream` and
        `generate_uncached` are not compiled.
    """

    def __init__(self, model, seg_len=None, mem_len=None, clamp_len=None, same_length=False,
                 jit_compile=False):
        c = model.config
        check_settings(seg_len, mem_len, clamp_len)
        self.model = model
        self.seg_len = int(c.tgt_len if seg_len is None else seg_len)
        self.mem_len = int(c.mem_len if mem_len is None else mem_len)
        if self.mem_len < 1:
            raise ValueError(f"generation needs mem_len >= 1 to cache the context; the model's "
                             f"mem_len is {self.mem_len}: pass mem_len >= 1.")
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
            lambda prompt, n, temperature, top_k, top_p, seed, stop_ids: generate_ids(
                model, prompt, n, temperature, top_k, top_p, seed, self.seg_len, *settings,
                stop_ids=stop_ids),
            input_signature=[tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([], tf.int32),
                             scalar, tf.TensorSpec([], tf.int32), scalar,
                             tf.TensorSpec([], tf.int64), tf.TensorSpec([None], tf.int32)])
        self.compilation = choose_generation(jit_compile)
        self.jit_compile = self.compilation.mode is not None
        # Traced once per (batch, prompt bucket, max_tokens): the shapes XLA compiles for.
        self.compiled = tf.function(self._fixed, jit_compile=True)

    def _fixed(self, prompt, length, num_tokens, temperature, top_k, top_p, seed, stop_ids,
               max_tokens):
        seg_len = min(self.seg_len, int(prompt.shape[1]))  # `prompt_bucket`'s segment
        return generate_fixed(self.model, prompt, length, num_tokens, max_tokens, temperature,
                              top_k, top_p, seed, seg_len, self.mem_len, self.clamp_len,
                              self.same_length, stop_ids)

    def generate_compiled(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0,
                          seed=0, stop_ids=()):
        """`generate` as one XLA program (see `jit_compile`): int32 numpy [B, num_tokens]."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        return self._generate_compiled(prompt, num_tokens, temperature, top_k, top_p, seed,
                                       stop_ids)

    def _generate_compiled(self, prompt, num_tokens, temperature, top_k, top_p, seed,
                           stop_ids=()):
        """`generate_compiled` on arguments `check_call` has checked."""
        prompt = np.asarray(prompt, np.int32)
        batch, length = prompt.shape
        if length < 1:
            raise ValueError("the prompt is empty: give at least one token.")
        padded = np.zeros([batch, prompt_bucket(length, self.seg_len)[1]], np.int32)
        padded[:, :length] = prompt
        out = self.compiled(tf.constant(padded), tf.constant(length, tf.int32),
                            tf.constant(num_tokens, tf.int32),
                            *self._settings(temperature, top_k, top_p, seed),
                            _stop_tensor(stop_ids), max_tokens=tokens_bucket(num_tokens))
        return out.numpy()[:, :num_tokens]

    @staticmethod
    def _settings(temperature, top_k, top_p, seed):
        return (tf.constant(temperature, tf.float32), tf.constant(top_k, tf.int32),
                tf.constant(top_p, tf.float32), tf.constant(seed, tf.int64))

    def generate(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0, seed=0,
                 stop_ids=()):
        """All tokens in one call: int32 numpy [B, num_tokens]. One XLA program with
        `jit_compile` (`generate_compiled`), else one graph call (a tf.while_loop). With
        `stop_ids` (ints) the loop ends once every row has generated one of them; what a row
        holds after its first one is for the caller to mask (see the module docstring)."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        if self.jit_compile:
            return self._generate_compiled(prompt, num_tokens, temperature, top_k, top_p, seed,
                                           stop_ids)
        prompt = tf.convert_to_tensor(prompt, tf.int32)
        return self._generate(prompt, tf.constant(num_tokens, tf.int32),
                              *self._settings(temperature, top_k, top_p, seed),
                              _stop_tensor(stop_ids)).numpy()

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
