"""int8 over the whole model: `quantize_model`, and what it covers (`quantized_share`).

`TransformerXL.quantize("int8")` and `TransformerXLCausalLM.quantize("int8")` call
`quantize_model`. It reaches every projection of the model: the attention's qkv, r and o (all
four attention variants: `RelativeMultiHeadAttention`, `LearnedRelativeMultiHeadAttention`),
the adaptive embedding's tables and projections (tied with the adaptive softmax) and the
softmax's own projections, through `ProjectionWeights`; and the feed-forward `Dense` layers,
through Keras' own int8 `Dense`. LayerNorms, biases, the u/v biases, cluster weights and
position tables stay float32. Keras' `Model.quantize` reaches only layers without sublayers,
which leaves out the attention (it holds a LayerNorm), hence this walk.
"""
from typing import Dict, List

import keras
import numpy as np

from txl_tf.layers.projection_weights import ProjectionWeights

MODES = ("int8",)


def _keras_quantizable(layer) -> bool:
    return isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))


def quantize_model(model, mode=None, config=None, **kwargs) -> List[str]:
    """Quantizes every projection of `model` (a `TransformerXL` or a model holding one).

    Args:
      model: a built Keras model.
      mode: "int8" (the only mode txl-tf's own layers take).
      config, **kwargs: what Keras' `quantize` wrapper passes (the mode's default config,
        type_check); the scales are txl-tf's own (one per output channel, absolute maximum).

    Returns:
      The paths of the layers quantized by this call (already quantized ones are skipped).

    Raises:
      ValueError: another mode or a float16 compute dtype (int8 needs float32 or bfloat16);
        nothing is changed then.
    """
    del kwargs
    mode = mode if mode is not None else getattr(config, "mode", None)
    if mode not in MODES:
        raise ValueError(f"quantize() takes mode='int8' only, got {mode!r}: txl-tf quantizes "
                         "every projection to int8 with one scale per output channel.")
    layers = [layer for layer in model._flatten_layers(include_self=False)  # noqa: SLF001
              if isinstance(layer, ProjectionWeights) or _keras_quantizable(layer)]
    if any(layer.compute_dtype == "float16" for layer in layers):
        raise ValueError("int8 quantization needs a float32 or bfloat16 compute dtype, not the "
                         "mixed_float16 policy: build the model with dtype float32 (load it "
                         "again with keras.config.set_dtype_policy('float32')), then quantize.")
    done = []
    for layer in layers:
        if getattr(layer, "_is_quantized", False) or (
                _keras_quantizable(layer) and layer.quantization_mode is not None):
            continue
        layer.quantize(mode)
        done.append(layer.path)
    model.train_function = model.test_function = model.predict_function = None
    return done


def quantization_mode(model):
    """"int8" when any layer of `model` holds int8 weights, else None."""
    for layer in model._flatten_layers(include_self=False):  # noqa: SLF001
        if getattr(layer, "_is_quantized", False) or (
                _keras_quantizable(layer) and layer.quantization_mode is not None):
            return "int8"
    return None


def quantized_share(model) -> Dict[str, float]:
    """How much of `model` is int8: parameter counts and the weights' bytes.

    Returns:
      {"parameters": the model's parameters (each variable once; the int8 scales, which a
       float model lacks, left out), "int8_parameters": those held in int8, "share": their
       ratio, "bytes": the bytes of every weight, scales included}.
    """
    seen, total, int8, size = set(), 0, 0, 0
    for variable in model.weights:
        if id(variable) in seen:
            continue
        seen.add(id(variable))
        count = int(np.prod(variable.shape))
        size += count * np.dtype(variable.dtype).itemsize
        if variable.path.endswith("_scale") and not variable.trainable:
            continue
        total += count
        if variable.dtype == "int8":
            int8 += count
    return {"parameters": total, "int8_parameters": int8, "share": int8 / max(total, 1),
            "bytes": size}
