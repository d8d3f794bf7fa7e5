"""`Generator`: cached generation for a `TransformerXL` through its memory, as generate.py, the
Keras model's `generate` and the benchmarks run it.

Its settings are built once at its door: the memory settings as one `ContextSettings`
(tgt_len: the prompt's segment length), the sampling settings of every call as one `Sampler`
of tensors; the loops are `graph_loop.generate_ids` (one graph call) and
`fixed_loop.generate_fixed` (one XLA program, `jit_compile`).

Example:
  >>> gen = Generator(model, seg_len=64, mem_len=1600)
  >>> gen.generate(np.array([[5, 6, 7]]), 20, temperature=0.8, top_k=40, seed=1)  # int32 [1, 20]
"""
import numpy as np
import tensorflow as tf

from txl_tf.devices.step_compilation import choose_generation
from txl_tf.generation import sampling
from txl_tf.generation.buckets import prompt_bucket, tokens_bucket
from txl_tf.generation.call_bounds import check_call, check_settings
from txl_tf.generation.fixed_loop import generate_fixed
from txl_tf.generation.graph_loop import (consume_prompt, empty_mems, generate_ids, model_step,
                                          stop_tensor)
from txl_tf.generation.sampler import Sampler
from txl_tf.model.context_settings import ContextSettings


def sampler_tensors(temperature, top_k, top_p, seed) -> Sampler:
    """The `Sampler` of settings as tensors (float32, int32, float32, int64; each a scalar
    or one per row [B]), the values the loops take (`check_call` checks the ranges first)."""
    return Sampler(tf.constant(temperature, tf.float32), tf.constant(top_k, tf.int32),
                   tf.constant(top_p, tf.float32), tf.constant(seed, tf.int64))


def sampler_fields(sampler) -> tuple:
    """The four tensors of a `Sampler`, the form a tf.function takes them in."""
    return sampler.temperature, sampler.top_k, sampler.top_p, sampler.seed


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

    Attributes:
      context: the `ContextSettings` of every call (tgt_len: seg_len).
    """

    def __init__(self, model, seg_len=None, mem_len=None, clamp_len=None, same_length=False,
                 jit_compile=False):
        c = model.config
        check_settings(seg_len, mem_len, clamp_len)
        self.model = model
        mem_len = int(c.mem_len if mem_len is None else mem_len)
        if mem_len < 1:
            raise ValueError(f"generation needs mem_len >= 1 to cache the context; the model's "
                             f"mem_len is {mem_len}: pass mem_len >= 1.")
        self.context = context = ContextSettings.of_config(
            c, tgt_len=seg_len, mem_len=mem_len, clamp_len=clamp_len,
            same_length=bool(same_length))
        mems_spec = tf.TensorSpec([c.n_layer, None, None, c.d_model], tf.float32)
        self.consume = tf.function(
            lambda prompt, mems: consume_prompt(model, prompt, mems, context),
            input_signature=[tf.TensorSpec([None, None], tf.int32), mems_spec])
        self.step = tf.function(
            lambda tokens, mems: model_step(model, tokens, mems, context),
            input_signature=[tf.TensorSpec([None, None], tf.int32), mems_spec])
        scalar = tf.TensorSpec([], tf.float32)
        sampler_spec = (scalar, tf.TensorSpec([], tf.int32), scalar, tf.TensorSpec([], tf.int64))
        self.choose = tf.function(
            lambda log_probs, step, settings: sampling.choose(log_probs, step,
                                                              Sampler(*settings)),
            input_signature=[tf.TensorSpec([None, c.n_token], tf.float32),
                             tf.TensorSpec([], tf.int32), sampler_spec])
        self._generate = tf.function(
            lambda prompt, n, settings, stop_ids: generate_ids(
                model, prompt, n, Sampler(*settings), context, stop_ids=stop_ids),
            input_signature=[tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([], tf.int32),
                             sampler_spec, tf.TensorSpec([None], tf.int32)])
        self.compilation = choose_generation(jit_compile)
        self.jit_compile = self.compilation.mode is not None
        # Traced once per (batch, prompt bucket, max_tokens): the shapes XLA compiles for.
        self.compiled = tf.function(self._fixed, jit_compile=True)

    @property
    def seg_len(self) -> int:
        return self.context.tgt_len

    @property
    def mem_len(self) -> int:
        return self.context.mem_len

    @property
    def clamp_len(self) -> int:
        return self.context.clamp_len

    @property
    def same_length(self) -> bool:
        return self.context.same_length

    def _fixed(self, prompt, length, num_tokens, settings, stop_ids, max_tokens):
        # `prompt_bucket`'s segment: the prompt's padded length when shorter than seg_len
        context = self.context.replace(tgt_len=min(self.seg_len, int(prompt.shape[1])))
        return generate_fixed(self.model, prompt, length, num_tokens, max_tokens,
                              Sampler(*settings), context, stop_ids)

    def generate_compiled(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0,
                          seed=0, stop_ids=()):
        """`generate` as one XLA program (see `jit_compile`): int32 numpy [B, num_tokens]."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        return self._generate_compiled(prompt, num_tokens,
                                       sampler_tensors(temperature, top_k, top_p, seed),
                                       stop_ids)

    def _generate_compiled(self, prompt, num_tokens, sampler, stop_ids=()):
        """`generate_compiled` on arguments `check_call` has checked (`sampler`: tensors)."""
        prompt = np.asarray(prompt, np.int32)
        batch, length = prompt.shape
        if length < 1:
            raise ValueError("the prompt is empty: give at least one token.")
        padded = np.zeros([batch, prompt_bucket(length, self.seg_len)[1]], np.int32)
        padded[:, :length] = prompt
        out = self.compiled(tf.constant(padded), tf.constant(length, tf.int32),
                            tf.constant(num_tokens, tf.int32), sampler_fields(sampler),
                            stop_tensor(stop_ids), max_tokens=tokens_bucket(num_tokens))
        return out.numpy()[:, :num_tokens]

    def generate(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0, seed=0,
                 stop_ids=()):
        """All tokens in one call: int32 numpy [B, num_tokens]. One XLA program with
        `jit_compile` (`generate_compiled`), else one graph call (a tf.while_loop). With
        `stop_ids` (ints) the loop ends once every row has generated one of them; what a row
        holds after its first one is for the caller to mask (`graph_loop.py`)."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        sampler = sampler_tensors(temperature, top_k, top_p, seed)
        if self.jit_compile:
            return self._generate_compiled(prompt, num_tokens, sampler, stop_ids)
        prompt = tf.convert_to_tensor(prompt, tf.int32)
        return self._generate(prompt, tf.constant(num_tokens, tf.int32),
                              sampler_fields(sampler), stop_tensor(stop_ids)).numpy()

    def stream(self, prompt, num_tokens, temperature=1.0, top_k=0, top_p=1.0, seed=0):
        """Yields int32 numpy [B] token by token (same tokens as `generate`)."""
        check_call(prompt, self.model.config.n_token, num_tokens, top_k, seed)
        prompt = tf.convert_to_tensor(prompt, tf.int32)
        settings = sampler_fields(sampler_tensors(temperature, top_k, top_p, seed))
        log_probs, mems = self.consume(prompt, empty_mems(self.model.config,
                                                          tf.shape(prompt)[0]))
        for t in range(num_tokens):
            token = self.choose(log_probs, tf.constant(t), settings)
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
        settings = sampler_fields(sampler_tensors(temperature, top_k, top_p, seed))
        if getattr(self, "_rerun", None) is None:
            self._rerun = tf.function(lambda tokens: self.model(
                tokens, mems=None, training=False, mem_len=self.mem_len,
                clamp_len=self.clamp_len, same_length=self.same_length)["log_probs"][:, -1],
                input_signature=[tf.TensorSpec([None, None], tf.int32)])
        run = self._rerun
        out = []
        for t in range(num_tokens):
            token = self.choose(run(context), tf.constant(t), settings)
            out.append(token.numpy())
            context = tf.concat([context, token[:, None]], axis=1)
        return tf.stack(out, axis=1).numpy() if out else tf.zeros(
            [context.shape[0], 0], tf.int32).numpy()
