"""The declared ranges of the numbers `TransformerXLCausalLM`'s methods take (compile, fit,
evaluate, generate), checked by `check_arguments` before a method changes any state.

Generation's own ranges (seed, seg_len, mem_len, clamp_len) are those of every generation
(`txl_tf.generation.call_bounds`); the model's sizes are `TransformerXLConfig.RANGES`.
"""
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.call_bounds import GENERATION_RANGES, SETTING_RANGES
from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range

COMPILE_RANGES = {
    "clip": Range(None, None, "<= 0: no clipping", integer=False),
    "initial_loss_scale": Range(0.0, 2.0 ** 64, "a power of two, e.g. 2**15", open_low=True,
                                integer=False),
    "growth_interval": Range(1, INT32_MAX, "finite steps before the loss scale doubles"),
    "grad_accum_steps": Range(1, 2**20, "chunks of each replica batch"),
    "steps_per_execution": Range(1, INT32_MAX, "steps per compiled call"),
}
FIT_RANGES = {
    "epochs": Range(0, INT32_MAX, "passes"),
    "initial_epoch": Range(0, INT32_MAX, "the epoch to start at"),
    "steps_per_epoch": Range(1, INT32_MAX, "None: the whole dataset"),
    "validation_steps": Range(1, INT32_MAX, "None: the whole dataset"),
    "validation_freq": Range(1, INT32_MAX, "epochs"),
    "steps": Range(1, INT32_MAX, "None: the whole dataset"),
}
GENERATE_RANGES = {"seed": GENERATION_RANGES["seed"], **SETTING_RANGES}
# Keras arguments that take no part here: the loss is the model's mean NLL per target token.
_REFUSED = {
    "sample_weight": "fit() and evaluate() take no sample weights: the loss is the mean NLL of "
                     "the counted labels; set a label to -1 (padding) to leave it out.",
    "class_weight": "fit() takes no class weights: the loss is the mean NLL of the counted "
                    "labels; set a label to -1 (padding) to leave it out.",
    "validation_split": "fit() cannot split a dataset of contiguous batches; pass "
                        "validation_data= (the valid split's batches).",
}


def check_arguments(method: str, values: dict, table: dict) -> None:
    """Raises `CausalLMInputError` (one line) for an argument of `method` outside its range in
    `table` (None: the default), or one Keras takes that this model refuses.

    Args:
      method: how the message names the method ("fit", "compile", ...).
      values: {argument name: value given}.
      table: {argument name: `Range`}.
    """
    for name, value in values.items():
        if name in _REFUSED and value is not None:
            raise CausalLMInputError(_REFUSED[name])
        if name in table and value is not None:
            table[name].check(f"{method}({name}=...): {name}", value, CausalLMInputError)
