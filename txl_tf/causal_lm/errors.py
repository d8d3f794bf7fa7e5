"""The errors of the causal language model's functions (generate, presets, export).

`CausalLMInputError` is defined with generation (`txl_tf/generation/errors.py`), which raises
it too; it is named here for the rest of causal_lm/.
"""
from txl_tf.generation.errors import CausalLMInputError

__all__ = ["CausalLMInputError", "CausalLMRuntimeError"]


class CausalLMRuntimeError(RuntimeError):
    """Writing failed during the work (no space left, a read-only directory): the message
    names the problem and the fix in one line (exit code 1 when a runner reports it)."""
    exit_code = 1
