"""The error of the causal language model's functions (generate, presets, export)."""


class CausalLMInputError(ValueError):
    """Bad input to a causal language model function: the message names the problem and the
    fix in one line (exit code 2 when a runner reports it)."""
    exit_code = 2


class CausalLMRuntimeError(RuntimeError):
    """Writing failed during the work (no space left, a read-only directory): the message
    names the problem and the fix in one line (exit code 1 when a runner reports it)."""
    exit_code = 1
