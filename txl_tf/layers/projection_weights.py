"""int8 weights and LoRA adapters for layers that hold their projections as plain variables.

Keras quantizes and adapts `Dense` / `EinsumDense` layers; txl-tf's attention, adaptive
embedding and adaptive softmax hold their projections as named variables instead (the
reference checkpoint's `qkv`, `r`, `o`, `lookup_table`, `proj_W`, `cutoff_i/proj`), so that
checkpoints, presets, SavedModels and the TF1 / Hugging Face importers keep their names.
`ProjectionWeights` gives such a layer Keras' `quantize("int8")` and `enable_lora(rank)` with
the weights' names unchanged:

  int8:  the float variable `NAME` [*S] becomes an int8 variable `NAME` of the same shape and
         a float32 `NAME_scale` (S with the reduced axes kept as 1): w = int8 * scale, the
         absolute maximum of each output channel mapped to 127. The layer dequantizes the
         weight where it uses it (`projection`), so its arithmetic stays in its compute dtype.
  LoRA:  `NAME` is frozen and `NAME_lora_a` [I, r] and `NAME_lora_b` [r, O] (I: the product
         of the input axes, O: of the others; b starts at zero) are added; the layer uses
         w + reshape(a @ b) * alpha / r. Saved weights (`save_own_variables`) hold the merged
         kernel and no adapters: a saved adapted model is a plain model.

A layer lists its projections in `projection_axes()`: {name: the input axes, reduced by the
int8 scale}; names whose input axes lead (axes 0 .. k-1) can take LoRA adapters.
"""
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np
import tensorflow as tf

INT8_MAX = 127.0


def int8_quantize(weight: np.ndarray, axes: Tuple[int, ...]) -> Tuple[np.ndarray, np.ndarray]:
    """(int8 values, float32 scale) with weight ~= values * scale.

    Args:
      weight: float array [*S].
      axes: the axes one scale covers (the input axes of a projection).

    Returns:
      int8 [*S] and float32 scale [*S with `axes` of size 1]: the absolute maximum over
      `axes` maps to 127 (an all-zero channel gets scale 1).
    """
    weight = np.asarray(weight, np.float32)
    amax = np.max(np.abs(weight), axis=axes, keepdims=True)
    scale = np.where(amax > 0, amax / INT8_MAX, 1.0).astype(np.float32)
    values = np.clip(np.round(weight / scale), -INT8_MAX, INT8_MAX).astype(np.int8)
    return values, scale


class ProjectionWeights:
    """Mixin of a `keras.layers.Layer` whose projections are its own variables (see the module
    docstring). The layer reads every projection through `projection(name)`."""

    def projection_axes(self) -> Dict[str, Tuple[int, ...]]:
        """{attribute name: input axes} of the projections this layer holds (None ones are
        skipped)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    def _projection_state(self):
        state = self.__dict__.get("_projection_state_dict")
        if state is None:
            state = {"int8": set(), "lora": {}}
            object.__setattr__(self, "_projection_state_dict", state)
        return state

    @property
    def quantized_projections(self) -> List[str]:
        """Names of the projections held in int8."""
        return sorted(self._projection_state()["int8"])

    @property
    def lora_projections(self) -> List[str]:
        """Names of the projections that carry LoRA adapters."""
        return sorted(self._projection_state()["lora"])

    def _present(self) -> Dict[str, Tuple[int, ...]]:
        return {name: axes for name, axes in self.projection_axes().items()
                if getattr(self, name, None) is not None}

    # ------------------------------------------------------------------ reading
    def projection(self, name: str, dtype=None, rows: Optional[Tuple[int, int]] = None):
        """The weight `name` as the layer multiplies with it: the variable itself (float), or
        int8 * scale, plus the LoRA delta where adapters are on.

        Args:
          name: a key of `projection_axes()`.
          dtype: the result's dtype (default: the layer's compute dtype).
          rows: (lo, hi): only rows lo .. hi-1 of axis 0 (a bin of a table).

        Returns:
          A tensor shaped like the variable (or its rows).
        """
        state = self._projection_state()
        weight = getattr(self, name)
        if name not in state["int8"] and name not in state["lora"]:
            return weight if rows is None else weight[rows[0]:rows[1]]
        dtype = dtype or self.compute_dtype
        scale = getattr(self, f"{name}_scale") if name in state["int8"] else None
        if rows is not None:
            weight = weight[rows[0]:rows[1]]
            if scale is not None and scale.shape[0] != 1:
                scale = scale[rows[0]:rows[1]]
        if scale is not None:
            weight = tf.cast(weight, dtype) * tf.cast(scale, dtype)
        else:
            weight = tf.cast(weight, dtype)
        if name in state["lora"]:
            delta = self._lora_delta(name, dtype)
            weight = weight + (delta if rows is None else delta[rows[0]:rows[1]])
        return weight

    def gather_rows(self, name: str, ids, dtype=None):
        """tf.gather(projection(name), ids) without dequantizing the whole table: [*ids, d]."""
        state = self._projection_state()
        if name not in state["int8"] or name in state["lora"]:
            return tf.gather(self.projection(name, dtype), ids)
        dtype = dtype or self.compute_dtype
        scale = getattr(self, f"{name}_scale")  # [n, 1]: one per row
        return tf.cast(tf.gather(getattr(self, name), ids), dtype) * tf.cast(
            tf.gather(scale[:, 0], ids), dtype)[..., None]

    def _lora_delta(self, name, dtype):
        rank, alpha = self._projection_state()["lora"][name]
        a = tf.cast(getattr(self, f"{name}_lora_a"), dtype)
        b = tf.cast(getattr(self, f"{name}_lora_b"), dtype)
        shape = getattr(self, name).shape
        return tf.reshape(tf.matmul(a, b), shape) * tf.cast(alpha / rank, dtype)

    def merged_value(self, name: str) -> np.ndarray:
        """float32 numpy value of `projection(name)` (int8 dequantized, adapters merged)."""
        return np.asarray(self.projection(name, tf.float32))

    # ------------------------------------------------------------------ int8
    def quantize(self, mode=None, type_check=True, config=None):
        """Keras' `Layer.quantize`: "int8" turns every projection into int8 + scale (see the
        module docstring); the layer's other weights (LayerNorm, biases, tables of positions)
        stay float. Adapters already on are kept (on top of the int8 weight)."""
        del type_check, config
        if mode != "int8":
            raise NotImplementedError(
                f"{type(self).__name__} quantizes its projections to int8 only, not {mode!r}.")
        state = self._projection_state()
        for name, axes in self._present().items():
            if name in state["int8"]:
                continue
            old = getattr(self, name)
            values, scale = int8_quantize(old.numpy(), axes)
            self._untrack_variable(old)
            new = self.add_weight(name=name, shape=values.shape, dtype="int8",
                                  initializer="zeros", trainable=False)
            new.assign(values)
            setattr(self, name, new)
            setattr(self, f"{name}_scale", self.add_weight(
                name=f"{name}_scale", shape=scale.shape, initializer="ones", trainable=False))
            getattr(self, f"{name}_scale").assign(scale)
            state["int8"].add(name)
        self._is_quantized = True

    # ------------------------------------------------------------------ LoRA
    def enable_lora(self, rank: int, lora_alpha: Optional[float] = None,
                    names: Optional[Iterable[str]] = None) -> List[str]:
        """Keras' `enable_lora`: freezes the projections `names` (default: every one whose
        input axes lead) and adds trainable adapters of rank `rank` to each.

        Args:
          rank: the adapters' rank r (a positive int).
          lora_alpha: the delta's scale numerator (default: rank, a scale of 1).
          names: projection names; those this layer lacks are skipped.

        Returns:
          The names adapted (sorted).

        Raises:
          ValueError: rank is not a positive int, or a projection already has adapters.
        """
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
            raise ValueError(f"the LoRA rank must be a positive integer, got {rank!r}.")
        state = self._projection_state()
        present = self._present()
        wanted = present if names is None else [n for n in names if n in present]
        adapted = []
        for name in wanted:
            axes = present[name]
            if tuple(axes) != tuple(range(len(axes))):
                continue  # input axes that do not lead (an embedding table): no adapters
            if name in state["lora"]:
                raise ValueError(f"{self.name}/{name} already has LoRA adapters.")
            shape = getattr(self, name).shape
            n_in, n_out = int(np.prod(shape[:len(axes)])), int(np.prod(shape[len(axes):]))
            self._tracker.unlock()
            try:
                getattr(self, name).trainable = False
                setattr(self, f"{name}_lora_a", self.add_weight(
                    name=f"{name}_lora_a", shape=(n_in, int(rank)),
                    initializer="he_uniform", trainable=True))
                setattr(self, f"{name}_lora_b", self.add_weight(
                    name=f"{name}_lora_b", shape=(int(rank), n_out), initializer="zeros",
                    trainable=True))
            finally:
                self._tracker.lock()
            state["lora"][name] = (int(rank), float(lora_alpha or rank))
            adapted.append(name)
        return sorted(adapted)

    def _adapter_variables(self):
        state = self._projection_state()
        return [getattr(self, f"{n}_lora_{s}") for n in state["lora"] for s in ("a", "b")]

    # ------------------------------------------------------------------ saving
    def _saved_variables(self):
        adapters = {id(v) for v in self._adapter_variables()}
        return [v for v in self._trainable_variables + self._non_trainable_variables
                if id(v) not in adapters]

    def save_own_variables(self, store):
        """Keras' variable store without adapters: an adapted projection is written merged
        (re-quantized when it is int8), so the file is that of a plain model."""
        state = self._projection_state()
        merged = {}
        for name in state["lora"]:
            value = self.merged_value(name)
            if name in state["int8"]:
                value, scale = int8_quantize(value, self._present()[name])
                merged[id(getattr(self, f"{name}_scale"))] = scale
            merged[id(getattr(self, name))] = value
        for i, variable in enumerate(self._saved_variables()):
            store[f"{i}"] = merged.get(id(variable), variable)

    def load_own_variables(self, store):
        """Reads what `save_own_variables` wrote; adapters restart at zero delta."""
        variables = self._saved_variables()
        if len(store.keys()) != len(variables):
            raise ValueError(
                f"layer {self.name!r} expects {len(variables)} variables but the file holds "
                f"{len(store.keys())}: it was saved from a model quantized differently "
                "(load it into a model quantized the same way).")
        for i, variable in enumerate(variables):
            variable.assign(store[f"{i}"])
        for variable in self._adapter_variables():
            if variable.path.endswith("_lora_b"):
                variable.assign(tf.zeros_like(variable))
