"""The bounds of one generation call, checked before any value is cast to int32.

TensorFlow casts a Python or NumPy integer to int32 modulo 2^32 without a word
(`tf.constant(2**32 + 6, tf.int32)` is 6), so lengths, `top_k` and seeds are range-checked here,
at the entry of every generation function, while they are still Python ints. TensorFlow-free.

`MAX_NEW_TOKENS` bounds the tokens one call generates: every new token is one forward pass, so a
call beyond it would run for days; generate in several calls (carrying the text) instead.
"""

import numpy as np

from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import INT64_MAX, Range

MAX_NEW_TOKENS = 1_000_000

# The declared ranges of a generation call's numbers (also generate.py's flags,
# `GenerateOptions.RANGES`, and the Keras API's `generate`).
GENERATION_RANGES = {
    "num_tokens": Range(0, MAX_NEW_TOKENS,
                        f"every new token is one forward pass; generate at most "
                        f"{MAX_NEW_TOKENS:,} tokens per call and continue from the text"),
    "top_k": Range(0, INT32_MAX, "0: no top-k filter"),
    "seed": Range(-INT64_MAX - 1, INT64_MAX, "an int64: token t uses the stateless seed "
                                             "(seed, t)"),
}

# The declared ranges of a generator's settings (generate.py's flags, the Keras API's
# `generate`, the export's --gen_seg_len / --gen_mem_len); None: the model's own.
SETTING_RANGES = {
    "seg_len": Range(1, INT32_MAX, "prompt tokens per segment"),
    "mem_len": Range(1, INT32_MAX, "generation keeps the context in the memory; mem_len >= 1"),
    "clamp_len": Range(0, INT32_MAX, "-1: none", also=(-1,)),
}


def check_settings(seg_len=None, mem_len=None, clamp_len=None, error=ValueError,
                   prefix="") -> None:
    """Raises `error` for a generator setting outside `SETTING_RANGES` (None: the model's)."""
    for name, value in (("seg_len", seg_len), ("mem_len", mem_len), ("clamp_len", clamp_len)):
        if value is not None:
            SETTING_RANGES[name].check(f"{prefix}{name}", value, error)


def check_int(name: str, value, low: int, high: int, error=ValueError, hint: str = "") -> int:
    """`value` as an int when it is an integer (not a bool) in [low, high], else `error`
    (`Range(low, high, hint).check`).

    Args:
      name: how the message names the value (e.g. "--top_k" or "top_k").
      value: the value given.
      low, high: the allowed range, both included.
      error: the exception class raised.
      hint: the end of the message after the range (why the bound; what to do).

    Returns:
      int(value).
    """
    return Range(low, high, hint).check(name, value, error)


def check_generation(num_tokens, top_k=0, seed=0, error=ValueError, prefix="") -> None:
    """Raises `error` for a token count, top_k or seed out of the ranges generation takes.

    Args:
      num_tokens: tokens to generate, in [0, MAX_NEW_TOKENS].
      top_k: in [0, INT32_MAX] (0: no top-k filter).
      seed: an int64 (token t uses the stateless seed (seed, t)).
      error: the exception class raised.
      prefix: put before each name ("--" for the runners' flags).
    """
    for name, value in (("num_tokens", num_tokens), ("top_k", top_k), ("seed", seed)):
        GENERATION_RANGES[name].check(f"{prefix}{name}", value, error)


def check_prompt_ids(prompt, n_token: int, error=ValueError) -> None:
    """Raises `error` unless `prompt` holds integer token ids in [0, n_token).

    Args:
      prompt: int [B, P] ids (NumPy, a list or an eager tensor), before any cast to int32.
      n_token: the model's vocabulary size V.
      error: the exception class raised.
    """
    ids = np.asarray(prompt)
    if ids.dtype.kind not in "iu":
        raise error(f"prompt ids must be integers, got dtype {ids.dtype}.")
    if ids.size and (ids.min() < 0 or ids.max() >= n_token):
        raise error(f"prompt ids must be in [0, {n_token}) (the model's n_token), got "
                    f"{ids.min()} .. {ids.max()}.")


def check_call(prompt, n_token, num_tokens, top_k=0, seed=0, error=ValueError) -> None:
    """`check_prompt_ids` and `check_generation` of one call of a generator."""
    check_prompt_ids(prompt, n_token, error)
    check_generation(num_tokens, top_k, seed, error)
