"""`generate(causal_lm, inputs, ...)`: strings in and strings out, or ids in and ids out.

The tokens come from `generator.Generator` (the cached decoding of runners/generate.py: the
prompt read in segments with memory, then one forward pass of length 1 per new token, the whole
loop one graph call) and `sampling.choose`, so that a prompt gives the same continuation as
`generate.py --model_dir=... --seed=... --nostream` with the same settings. The settings come
typed: one `Sampler` and one `ContextSettings` (`context_of` builds it from the Keras model's
loose seg_len, mem_len, clamp_len and same_length).
Prompts of different lengths are generated in groups of equal length (the model has no padding
mask; a row's tokens never depend on the other rows of its batch).

`max_length` counts tokens as keras-hub does: the prompt and its continuation together.
`stop_token_ids` ends rows as keras-hub does (`stop_tokens.py`); a `tf.data.Dataset` of prompts
is generated element by element and concatenated (`prompt_datasets.py`).

Example:
  >>> generate(causal_lm, ["The meaning of life is"], max_length=60, sampler="top_k")
  ['The meaning of life is ...']
  >>> generate(causal_lm, "abc", context=context_of(causal_lm.backbone.config, mem_len=40))
  >>> generate(causal_lm, np.array([[5, 6, 7]]), max_length=10)    # int32 [1, 10]
"""
import collections
import warnings
import weakref

import numpy as np
import tensorflow as tf

from txl_tf.devices.choices import JIT_COMPILE, JitCompile
from txl_tf.devices.step_compilation import choose_generation
from txl_tf.generation import prompt_datasets, stop_tokens
from txl_tf.generation.call_bounds import MAX_NEW_TOKENS, check_settings
from txl_tf.generation.errors import CausalLMInputError
from txl_tf.generation.generator import Generator
from txl_tf.generation.memory_fit import check_generation_fits
from txl_tf.generation.sampler import get_sampler
from txl_tf.model.context_settings import ContextSettings

DEFAULT_NEW_TOKENS = 100  # generate.py's default --num_tokens

# backbone -> {(ContextSettings, compiled): Generator}: its graphs are traced once (jit_compile
# True, "true" and "auto" on an accelerator: one compiled Generator)
_GENERATORS = weakref.WeakKeyDictionary()


def forget_generators(backbone) -> None:
    """Drops the generators kept for `backbone` (its variables were replaced)."""
    _GENERATORS.pop(backbone, None)


def context_of(config, seg_len=None, mem_len=None, clamp_len=None, same_length=False):
    """The `ContextSettings` of a generation from the Keras model's loose settings (None: the
    model's tgt_len, mem_len, clamp_len), checked with their names (`call_bounds`).

    Raises:
      CausalLMInputError: a setting out of its range, same_length not a bool.
    """
    check_flag("same_length", same_length)
    try:
        check_settings(seg_len, mem_len, clamp_len)
    except ValueError as error:
        raise CausalLMInputError(str(error)) from None
    return ContextSettings.of_config(config, tgt_len=seg_len, mem_len=mem_len,
                                     clamp_len=clamp_len, same_length=bool(same_length))


def generator_of(backbone, context, jit_compile=False):
    """The `Generator` of `backbone` with the `ContextSettings` `context` (tgt_len: the
    prompt's segment length), made once and kept with it."""
    try:
        jit_compile = JitCompile.parse(jit_compile)
    except ValueError:
        allowed = ", ".join(map(repr, JIT_COMPILE))
        raise CausalLMInputError(f"jit_compile must be a bool or one of {allowed}, got "
                                 f"{jit_compile!r}.") from None
    compiled = choose_generation(jit_compile).mode is not None
    key = (context, compiled)
    kept = _GENERATORS.setdefault(backbone, {})
    if key not in kept:
        try:
            kept[key] = Generator(backbone, seg_len=context.tgt_len, mem_len=context.mem_len,
                                  clamp_len=context.clamp_len,
                                  same_length=context.same_length, jit_compile=compiled)
        except ValueError as error:
            raise CausalLMInputError(str(error)) from None
    return kept[key]


def check_flag(name, value):
    """Refuses a flag that is not a bool (a string such as "no" would read as True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise CausalLMInputError(f"{name} must be True or False, got {value!r}.")


def _strings(inputs):
    """(list of str, single) when `inputs` is text, else None."""
    if isinstance(inputs, tf.Tensor) and inputs.dtype == tf.string:
        array = np.asarray(inputs.numpy(), dtype=object)
        try:
            decoded = [s.decode("utf-8") for s in array.reshape([-1])]
            inputs = decoded[0] if array.ndim == 0 else decoded
        except UnicodeDecodeError as error:
            raise CausalLMInputError(f"a prompt is not UTF-8 text (byte "
                                     f"{error.object[error.start]:#04x} at offset {error.start});"
                                     " give UTF-8 strings.") from None
    if isinstance(inputs, str):
        return [inputs], True
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(s, str) for s in inputs):
        return list(inputs), False
    return None


def _ids(inputs, n_token):
    """int32 [B, P] prompts of an id input; errors name the problem."""
    try:
        ids = np.asarray(inputs.numpy() if isinstance(inputs, tf.Tensor) else inputs)
    except ValueError:
        ids = np.asarray([], object)
    if ids.dtype.kind not in "iu" or ids.ndim not in (1, 2) or ids.size == 0:
        raise CausalLMInputError(
            "generate takes a prompt string, a list of strings, or token ids int [P] or [B, P] "
            f"with P >= 1 (equal lengths), got {type(inputs).__name__}"
            f"{' of shape ' + str(ids.shape) if ids.dtype != object else ''}.")
    if ids.min() < 0 or ids.max() >= n_token:
        raise CausalLMInputError(f"token ids must be in [0, {n_token}) (the model's n_token), "
                                 f"got {ids.min()} .. {ids.max()}.")
    return ids.astype(np.int32)


def _tokenize(preprocessor, texts):
    if preprocessor is None:
        raise CausalLMInputError("the model has no preprocessor to read text; give token ids, "
                                 "or a preprocessor (from_preset of a directory with a "
                                 "vocabulary, or preprocessor=).")
    prompts = []
    for i, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise CausalLMInputError(f"prompt {i} is not valid text: {text[error.start]!r} at "
                                     f"{error.start} is a lone surrogate (undecoded bytes); give "
                                     "UTF-8 text.") from None
        ids = preprocessor.tokenize(text)
        if len(ids) == 0:
            raise CausalLMInputError(f"prompt {i} ({text!r}) has no tokens; give at least one "
                                     "symbol.")
        unknown = preprocessor.unknown_symbols(text)
        if unknown:
            warnings.warn(f"prompt {i}: {len(unknown)} symbol(s) not in the vocabulary, read as "
                          f"the unknown symbol: {', '.join(map(repr, unknown[:10]))}",
                          stacklevel=3)
        prompts.append(ids)
    return prompts


def _new_tokens(lengths, max_length):
    """Tokens to generate after a prompt of each length."""
    if max_length is None:
        return {n: DEFAULT_NEW_TOKENS for n in lengths}
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise CausalLMInputError(f"max_length must be an int (prompt + generated tokens), got "
                                 f"{max_length!r}.")
    if max_length < max(lengths):
        raise CausalLMInputError(f"max_length={max_length} is shorter than the longest prompt "
                                 f"({max(lengths)} tokens); give max_length >= {max(lengths)} "
                                 "(it counts the prompt and the generated tokens).")
    if max_length - min(lengths) > MAX_NEW_TOKENS:
        raise CausalLMInputError(
            f"max_length={max_length} asks for {max_length - min(lengths):,} new tokens after a "
            f"prompt of {min(lengths)}; generate at most {MAX_NEW_TOKENS:,} per call (each new "
            "token is one forward pass) and continue from the text.")
    return {n: int(max_length) - n for n in lengths}


def continue_prompts(backbone, prompts, new_tokens, sampler, context, jit_compile=False,
                     stop_ids=()) -> list:
    """The generated ids of every prompt, prompts of equal length in one batch.

    Args:
      backbone: the `TransformerXL`.
      prompts: list of int32 [P_i] prompts.
      new_tokens: {P: tokens to generate after a prompt of P tokens}.
      sampler: the `Sampler`.
      context: the `ContextSettings` (tgt_len: the prompt's segment length).
      jit_compile: as `generate`'s.
      stop_ids: a batch's loop ends once each of its rows has generated one of these ids.

    Returns:
      list of int32 [new_tokens[P_i]] arrays, in the order of `prompts` (after a row's first
      stop token: what `stop_tokens` masks).
    """
    gen = generator_of(backbone, context, jit_compile)
    groups = collections.defaultdict(list)
    for i, prompt in enumerate(prompts):
        groups[len(prompt)].append(i)
    for length, rows in groups.items():  # every batch's memory, before the first is run
        check_generation_fits(backbone.config, length, new_tokens[length], context,
                              compiled=gen.jit_compile, batch=len(rows),
                              names={"tgt_len": "seg_len", "mem_len": "mem_len",
                                     "batch": "fewer prompts at once"})
    out = [None] * len(prompts)
    for length, rows in groups.items():
        batch = np.stack([prompts[i] for i in rows])
        generated = gen.generate(batch, new_tokens[length], **sampler.settings(),
                                 stop_ids=stop_ids)
        for i, row in zip(rows, generated):
            out[i] = row.astype(np.int32)
    return out


def generate(causal_lm, inputs, max_length=None, sampler="greedy", strip_prompt=False,
             context=None, jit_compile="auto", stop_token_ids=stop_tokens.AUTO):
    """Continues prompts with the model's cached decoding.

    Args:
      causal_lm: an object with `.backbone` (a `TransformerXL`) and `.preprocessor` (None, or
        an object with `tokenize`, `unknown_symbols`, `continuation` and `model_vocab`, e.g.
        `tf_records.causal_lm_preprocessor.CausalLMPreprocessor`).
      inputs: a str, a list of str (or a tf.string tensor), token ids int [P] or [B, P], or a
        `tf.data.Dataset` of any of these (`prompt_datasets.py`).
      max_length: tokens of a prompt and its continuation together (default: the prompt + 100).
      sampler: "greedy", "top_k", "top_p", "random" or a `Sampler(temperature, top_k, top_p,
        seed)` (`get_sampler(sampler, seed)` gives another seed).
      strip_prompt: return the continuation only (what generate.py prints).
      context: the `ContextSettings` of generate.py's --seg_len (its tgt_len), --mem_len,
        --clamp_len and --same_length (`context_of`); None: `context_of(config)`, the model's
        tgt_len, mem_len and clamp_len, same_length False.
      jit_compile: "auto", "true", "false" or a bool, as generate.py's --jit_compile: run every
        batch's whole sampling loop as one XLA program (the same tokens; one compilation per
        batch size, prompt bucket and output bucket, `fixed_loop.py`); auto: on
        GPU and TPU, off on CPU.
      stop_token_ids: "auto" (the vocabulary's end-of-line symbol, if it has one), None (run
        to max_length) or token ids; see `stop_tokens.py`.

    Returns:
      Text in: a str per prompt (a str for a str), each the prompt followed by its
      continuation (up to its stop token). Ids in: int32 numpy [B, max_length] ([max_length]
      for [P]; after a row's stop token, that token); with strip_prompt, [B, max_length - P].
      A dataset: a list of str, or int32 [N, W].

    Raises:
      CausalLMInputError: inputs of another kind, empty prompts, ids out of range, a bad
        sampler, max_length or stop_token_ids, text without a preprocessor.
    """
    sampler = get_sampler(sampler)
    check_flag("strip_prompt", strip_prompt)
    backbone = causal_lm.backbone
    if context is None:
        context = context_of(backbone.config)
    stop_ids = stop_tokens.stop_ids_of(stop_token_ids, causal_lm.preprocessor,
                                       backbone.config.n_token)
    if prompt_datasets.is_dataset(inputs):
        elements, text = prompt_datasets.checked_elements(inputs)
        return prompt_datasets.joined(
            [generate(causal_lm, element, max_length, sampler, strip_prompt, context,
                      jit_compile, stop_ids) for element in elements], text)
    texts = _strings(inputs)
    if texts is not None:
        prompts = _tokenize(causal_lm.preprocessor, texts[0])
    else:
        ids = _ids(inputs, backbone.config.n_token)
        prompts = list(ids.reshape([-1, ids.shape[-1]]))
    new_tokens = _new_tokens({len(p) for p in prompts}, max_length)
    generated = continue_prompts(backbone, prompts, new_tokens, sampler, context, jit_compile,
                                 stop_ids)
    if texts is None:
        generated = [stop_tokens.pad_after_stop(g, stop_ids) for g in generated]
        rows = np.stack(generated if strip_prompt else [np.concatenate([p, g]) for p, g in
                                                         zip(prompts, generated)])
        return rows[0] if ids.ndim == 1 else rows
    pre = causal_lm.preprocessor
    drop = stop_tokens.special_ids(pre)
    outputs = [("" if strip_prompt else text)
               + pre.continuation(p, stop_tokens.until_stop(g, stop_ids, drop))
               for text, p, g in zip(texts[0], prompts, generated)]
    return outputs[0] if texts[1] else outputs
