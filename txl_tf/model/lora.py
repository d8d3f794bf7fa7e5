"""LoRA fine-tuning of a txl-tf model: `enable_lora_on`.

keras-hub's backbones adapt the layers named "query" and "value" by default; txl-tf has no such
layers: the attention fuses its query, key and value projections into one weight `qkv`
[D, 3, N, H] (the reference checkpoint's layout), projects the relative sinusoids with `r` and
its output with `o`. The default targets are therefore `qkv` (which holds the query and value
projections, with the key's) and `o`; `r` projects position encodings that do not depend on
the text and is left out unless named. The feed-forward `layer_1` / `layer_2` (Keras `Dense`)
and the embedding projections (`proj_W`, `cutoff_i_proj_W`) can be named too.

Every other weight is frozen, so training (`fit`, runners/train.py --lora_rank) updates only
the adapters; saving (presets, `save_weights`) writes the merged kernels.
"""
from typing import Iterable, List, Optional

import keras

from txl_tf.layers.projection_weights import ProjectionWeights
from txl_tf.model.quantization import quantization_mode

DEFAULT_TARGETS = ("qkv", "o")


def _targets_of(layer) -> List[str]:
    if isinstance(layer, ProjectionWeights):
        return [name for name, axes in layer.projection_axes().items()
                if getattr(layer, name, None) is not None
                and tuple(axes) == tuple(range(len(axes)))]
    if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense)):
        return [layer.name]
    return []


def enable_lora_on(model, rank: int, target_names: Optional[Iterable[str]] = None,
                   lora_alpha: Optional[float] = None) -> List[str]:
    """Freezes `model` and adds LoRA adapters of rank `rank` to the projections named.

    Args:
      model: a built `TransformerXL` (or a model holding one).
      rank: the adapters' rank (a positive int).
      target_names: projection names (`qkv`, `r`, `o`, `proj_W`, `cutoff_i_proj_W`) or Keras
        `Dense` layer names (`layer_1`, `layer_2`); default `DEFAULT_TARGETS`.
      lora_alpha: the delta's scale numerator (default: rank).

    Returns:
      The paths of the weights adapted under the model, e.g. ["layer_0/rel_attn/o",
      "layer_0/rel_attn/qkv"].

    Raises:
      ValueError: a bad rank, a name no layer has (the message lists the names there are), or
        weights already adapted; nothing is changed then.
    """
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"the LoRA rank must be a positive integer, got {rank!r}.")
    targets = tuple(DEFAULT_TARGETS if target_names is None else target_names)
    layers = list(model._flatten_layers(include_self=False))  # noqa: SLF001
    available = sorted({name for layer in layers for name in _targets_of(layer)})
    unknown = sorted(set(targets) - set(available))
    if unknown or not targets:
        raise ValueError(f"enable_lora: no projection named {', '.join(unknown) or '(none)'}; "
                         f"this model's projections are {', '.join(available)}.")
    if has_adapters(model):
        raise ValueError("enable_lora: this model already has LoRA adapters.")
    for variable in model.weights:
        variable.trainable = False
    adapted = []
    for layer in layers:
        if isinstance(layer, ProjectionWeights):
            for name in layer.enable_lora(rank, lora_alpha, names=targets):
                adapted.append(getattr(layer, name).path)
        elif layer.name in targets and _targets_of(layer):
            layer.enable_lora(rank, lora_alpha=lora_alpha)
            adapted.append(layer.path)
    model.train_function = model.test_function = model.predict_function = None
    prefix = f"{model.name}/"
    return sorted(p[len(prefix):] if p.startswith(prefix) else p for p in adapted)


def trainable_share(model) -> float:
    """Share of `model`'s parameters that training updates (each variable counted once)."""
    seen, total, trained = set(), 0, 0
    for variable in model.weights:
        if id(variable) not in seen:
            seen.add(id(variable))
            count = int(variable.numpy().size)
            total += count
            trained += count if variable.trainable else 0
    return trained / max(total, 1)


def has_adapters(model) -> bool:
    """Whether any layer of `model` carries LoRA adapters."""
    return any(getattr(layer, "lora_enabled", False) or getattr(layer, "lora_projections", None)
               for layer in model._flatten_layers(include_self=False))  # noqa: SLF001


def merged_copy(backbone):
    """`backbone` itself when it has no adapters; else a new `TransformerXL` of its config and
    quantization holding its weights with the adapters merged (what an export serves).

    Each layer's `save_own_variables` writes merged kernels (`ProjectionWeights`, Keras'
    `Dense`), and the layers of two models of one config pair up in order.
    """
    if not has_adapters(backbone):
        return backbone
    copy = type(backbone)(backbone.config, dtype=backbone.dtype_policy)
    mode = quantization_mode(backbone)
    if mode is not None:
        copy.quantize(mode)
    copy_weights(backbone, copy)
    return copy


def copy_weights(source, target) -> None:
    """Copies the weights of `source` into `target`, two models of one config and quantization,
    either of them adapted: adapters of `source` are merged, those of `target` restart (b at
    zero, so the copy computes what `source` does).

    Each layer's `save_own_variables` writes merged kernels (`ProjectionWeights`, Keras'
    `Dense`), and the layers of two models of one config pair up in order.
    """
    pairs = zip(source._flatten_layers(include_self=True),  # noqa: SLF001
                target._flatten_layers(include_self=True))  # noqa: SLF001
    for one, other in pairs:
        store = {}
        one.save_own_variables(store)
        if store:
            other.load_own_variables(store)
        if getattr(other, "lora_enabled", False):  # Keras zeroes both factors: a restarts
            other.lora_kernel_a.assign(
                keras.initializers.HeUniform()(other.lora_kernel_a.shape))
