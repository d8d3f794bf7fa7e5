"""The error of the causal language model's functions (generate, presets, export)."""


class CausalLMInputError(ValueError):
    """Bad input to a causal language model function: the message names the problem and the
    fix in one line (exit code 2 when a runner reports it)."""
    exit_code = 2
