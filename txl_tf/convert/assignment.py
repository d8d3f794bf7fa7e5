"""Assign named arrays to every variable of a `TransformerXL`, each exactly once.

Variables are named by their Keras path without the model's own name, e.g.
`layer_0/rel_attn/qkv`, `adaptive_embed/cutoff_1_proj_W`, `adaptive_softmax/cluster_W`, `r_w_bias`.
"""
import numpy as np

from txl_tf.convert.errors import WeightImportError


def model_variables(model):
    """{name without the model prefix: variable} of every distinct weight of `model`."""
    out = {}
    seen = set()
    for variable in model.weights:
        if id(variable) in seen:
            continue
        seen.add(id(variable))
        name = variable.path.split("/", 1)[1]
        if name in out:
            raise WeightImportError(f"two model variables share the name {name!r}.")
        out[name] = variable
    return out


def assign_all(model, values):
    """Assign `values` ({name: array}) to the variables of `model`.

    Every model variable must receive exactly one value of exactly its shape, and every value
    must name a model variable; otherwise nothing is assigned and a `WeightImportError` lists
    the missing, unexpected and mis-shaped names.
    """
    variables = model_variables(model)
    missing = sorted(set(variables) - set(values))
    unexpected = sorted(set(values) - set(variables))
    shapes = []
    for name in sorted(set(variables) & set(values)):
        want = tuple(variables[name].shape)
        got = tuple(np.shape(values[name]))
        if want != got:
            shapes.append(f"{name}: model {want}, source {got}")
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"model variables without a source value: {missing}")
        if unexpected:
            parts.append(f"mapped values without a model variable: {unexpected}")
        if shapes:
            parts.append(f"shape mismatches: {shapes}")
        raise WeightImportError(
            "the source does not fit the inferred configuration; " + "; ".join(parts) +
            ". Check the configuration flags (n_head, d_head, cutoffs, div_val, untie_r).")
    for name, variable in variables.items():
        variable.assign(np.asarray(values[name], dtype=variable.dtype))
    return sorted(variables)
