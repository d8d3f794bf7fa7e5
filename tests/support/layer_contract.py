"""`run_layer_test`: the contract every Keras layer of txl_tf keeps.

For one layer class and its constructor arguments, checked on fresh instances:
  * config: every constructor argument is in `get_config()`, and `from_config` rebuilds a layer
    with the same config;
  * serialization: `keras.saving.serialize_keras_object` names the registered class
    (`txl_tf>Name`), survives JSON, and `deserialize_keras_object` gives the class back with the
    same config;
  * building: calling an unbuilt layer builds it; `build()` alone makes the same weights (names,
    shapes) as the call, and the call then adds none;
  * weights: the expected numbers of trainable weights, non-trainable weights and non-trainable
    variables (e.g. dropout seed states); every trainable weight gets a gradient;
  * output: the expected shape (any nest of tensors), and a revived layer with the same weights
    gives the same output;
  * dtype policy: under "float32" and "mixed_bfloat16" the weights are float32, the outputs
    have the expected dtype (the policy's compute dtype unless the layer promises float32),
    and the policy survives `get_config` / `from_config`.
"""
import json

import keras
import numpy as np
import tensorflow as tf

POLICIES = ("float32", "mixed_bfloat16")


def run_layer_test(layer_cls, init_kwargs, input_data, call_kwargs=None, *,
                   expected_output_shape, expected_num_trainable_weights,
                   expected_num_non_trainable_weights=0,
                   expected_num_non_trainable_variables=None, expected_output_dtype=None,
                   built_by_init=False, check_gradients=True, dtype_policies=POLICIES,
                   policy_in_config=True):
    """Checks `layer_cls(**init_kwargs)` against the layer contract (module docstring).

    Args:
      layer_cls: a `keras.layers.Layer` subclass.
      init_kwargs: constructor arguments.
      input_data: the first call argument (a tensor or a nest of them).
      call_kwargs: the other call arguments (tensors or Python values).
      expected_output_shape: a shape tuple, or a nest of them matching the output.
      expected_num_trainable_weights, expected_num_non_trainable_weights: weight counts.
      expected_num_non_trainable_variables: non-trainable variables including the seed states
        of `keras.random.SeedGenerator`s (default: the number of non-trainable weights).
      expected_output_dtype: a dtype name every floating output has under every policy, or None
        for the policy's compute dtype.
      built_by_init: the constructor builds the layer (the call-builds check is skipped).
      check_gradients: every trainable weight must get a gradient of a random projection of the
        floating outputs.
      dtype_policies: the policies the layer is constructed with (`dtype=`) and checked under.
      policy_in_config: the policy must survive `get_config` / `from_config`.

    Raises:
      AssertionError: naming the broken part of the contract.
    """
    call_kwargs = dict(call_kwargs or {})
    if expected_num_non_trainable_variables is None:
        expected_num_non_trainable_variables = expected_num_non_trainable_weights
    check_config_round_trip(layer_cls, init_kwargs)
    check_serialization(layer_cls, init_kwargs)
    layer = layer_cls(**init_kwargs)
    output = check_build(layer_cls, init_kwargs, layer, input_data, call_kwargs, built_by_init)
    counts = (len(layer.trainable_weights), len(layer.non_trainable_weights),
              len(layer.non_trainable_variables))
    expected = (expected_num_trainable_weights, expected_num_non_trainable_weights,
                expected_num_non_trainable_variables)
    assert counts == expected, (f"{layer_cls.__name__}: (trainable weights, non-trainable "
                                f"weights, non-trainable variables) {counts}, expected {expected}")
    check_output_shape(layer_cls, output, expected_output_shape)
    check_revived_output(layer, input_data, call_kwargs, output)
    if check_gradients:
        check_every_weight_has_a_gradient(layer, input_data, call_kwargs)
    for policy in dtype_policies:
        check_dtype_policy(layer_cls, init_kwargs, input_data, call_kwargs, policy,
                           expected_output_dtype, policy_in_config)


def comparable(value):
    """A JSON-like form of a config value: tuples as lists, configs/initializers as dicts."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    elif isinstance(value, keras.initializers.Initializer):
        value = keras.initializers.serialize(value)
    return json.loads(json.dumps(value, default=str))


def check_config_round_trip(layer_cls, init_kwargs):
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    for name, value in init_kwargs.items():
        assert name in config, f"{layer_cls.__name__}.get_config() lacks the argument {name!r}"
        if isinstance(value, (str, int, float, bool, tuple, list, type(None))) or hasattr(
                value, "to_dict"):
            assert comparable(config[name]) == comparable(value), (
                f"{layer_cls.__name__}.get_config()[{name!r}] is {config[name]!r}, "
                f"constructed with {value!r}")
    revived = layer_cls.from_config(config)
    assert type(revived) is layer_cls
    assert comparable(revived.get_config()) == comparable(config), (
        f"{layer_cls.__name__}.from_config(config).get_config() differs from config")


def check_serialization(layer_cls, init_kwargs):
    layer = layer_cls(**init_kwargs)
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == f"txl_tf>{layer_cls.__name__}", (
        f"{layer_cls.__name__} is not registered with "
        "@keras.saving.register_keras_serializable(package='txl_tf')")
    revived = keras.saving.deserialize_keras_object(json.loads(json.dumps(serialized)))
    assert type(revived) is layer_cls
    assert comparable(revived.get_config()) == comparable(layer.get_config())


def check_build(layer_cls, init_kwargs, layer, input_data, call_kwargs, built_by_init):
    """Calls `layer` (unbuilt unless built_by_init) and compares with an explicit build()."""
    assert layer.built == built_by_init, (
        f"{layer_cls.__name__}: built={layer.built} right after the constructor")
    output = layer(input_data, **call_kwargs)
    assert layer.built, f"{layer_cls.__name__} is not built after a call"
    explicit = layer_cls(**init_kwargs)
    if not built_by_init:
        explicit.build(None)
    shapes = weight_shapes(explicit)
    assert shapes == weight_shapes(layer), (
        f"{layer_cls.__name__}: build() makes {shapes}, a call {weight_shapes(layer)}")
    explicit(input_data, **call_kwargs)
    assert weight_shapes(explicit) == shapes, (
        f"{layer_cls.__name__}: calling a built layer added weights")
    return output


def weight_shapes(layer):
    return sorted((w.path.split("/", 1)[-1], tuple(w.shape)) for w in layer.weights)


def check_output_shape(layer_cls, output, expected_output_shape):
    actual = tf.nest.map_structure(lambda t: tuple(t.shape), output)
    assert actual == expected_output_shape, (
        f"{layer_cls.__name__}: output shapes {actual}, expected {expected_output_shape}")


def check_revived_output(layer, input_data, call_kwargs, output):
    revived = type(layer).from_config(layer.get_config())
    revived(input_data, **call_kwargs)
    revived.set_weights(layer.get_weights())
    again = revived(input_data, **call_kwargs)
    for got, want in zip(tf.nest.flatten(again), tf.nest.flatten(output)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6,
                                   err_msg=f"{type(layer).__name__}: revived layer differs")


def check_every_weight_has_a_gradient(layer, input_data, call_kwargs):
    rng = np.random.default_rng(0)
    with tf.GradientTape() as tape:
        outputs = [tf.cast(t, tf.float32) for t in
                   tf.nest.flatten(layer(input_data, **call_kwargs))
                   if t.dtype.is_floating]
        loss = tf.add_n([tf.reduce_sum(t * rng.normal(size=t.shape).astype(np.float32))
                         for t in outputs])
    gradients = tape.gradient(loss, layer.trainable_weights)
    missing = [w.path for w, g in zip(layer.trainable_weights, gradients)
               if g is None or not np.any(np.asarray(tf.convert_to_tensor(g)))]
    assert not missing, f"{type(layer).__name__}: no gradient reaches {missing}"


def check_dtype_policy(layer_cls, init_kwargs, input_data, call_kwargs, policy,
                       expected_output_dtype, policy_in_config=True):
    layer = layer_cls(**dict(init_kwargs, dtype=policy))
    output = layer(input_data, **call_kwargs)
    wrong = [(w.path, w.dtype) for w in layer.weights if w.dtype != "float32"]
    assert not wrong, f"{layer_cls.__name__} under {policy}: weights not float32: {wrong}"
    want = expected_output_dtype or keras.DTypePolicy(policy).compute_dtype
    dtypes = [t.dtype.name for t in tf.nest.flatten(output) if t.dtype.is_floating]
    assert dtypes and set(dtypes) == {want}, (
        f"{layer_cls.__name__} under {policy}: output dtypes {dtypes}, expected {want}")
    if not policy_in_config:
        return
    revived = layer_cls.from_config(layer.get_config())
    assert revived.dtype_policy.name == policy, (
        f"{layer_cls.__name__}: the policy {policy} is lost by get_config/from_config")
