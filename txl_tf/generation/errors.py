"""The error of generation's input, which the Keras causal LM's functions share.

`CausalLMInputError` is raised for a bad sampler setting, prompt, max_length or stop token
(here) and for bad input to presets and export (`txl_tf/causal_lm/`, which names it from
`txl_tf.causal_lm.errors`): one class for the Keras model's user, defined here, below both
folders, so that generation needs nothing of causal_lm/.
"""


class CausalLMInputError(ValueError):
    """Bad input to a causal language model function: the message names the problem and the
    fix in one line (exit code 2 when a runner reports it)."""
    exit_code = 2
