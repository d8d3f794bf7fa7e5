"""The numbers of the Keras API (`TransformerXLCausalLM.compile / fit / evaluate / generate`,
`TransformerXLConfig`) have declared ranges (txl_tf/causal_lm/arguments.py, the config's
`RANGES`): a value drawn outside is refused in one line naming the argument and its range,
before any state changes; and the batches `fit` cannot honour (sample weights, ragged ids) are
refused in one line instead of dropped or ending in a Keras traceback."""
import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, strategies as st

import txl_tf
from tiny import tiny_model
from txl_tf.causal_lm.arguments import COMPILE_RANGES, FIT_RANGES, GENERATE_RANGES
from txl_tf.causal_lm.contiguous_batches import ContiguousBatchError
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.model.config import ConfigError
from txl_tf.model.memory_estimate import MemoryEstimateError, machine_memory_bytes
from txl_tf.runtime.ranges import Range

GOOD = np.arange(24).reshape(4, 6) % 50


def outside(range_: Range):
    """Values just outside `range_`, and hostile ones (2**31, 2**63, NaN, inf, bools)."""
    near = []
    if range_.low is not None:
        near += [range_.low - 1] if range_.integer else [math.nextafter(range_.low, -math.inf)]
        if range_.open_low:
            near.append(range_.low)
    if range_.high is not None:
        near += [range_.high + 1] if range_.integer else [math.nextafter(range_.high, math.inf)]
        if range_.open_high:
            near.append(range_.high)
    hostile = [2**31, 2**63, -2**63 - 1, math.nan, math.inf, -math.inf, True, "3", 1.5]
    return st.one_of(st.sampled_from(near + hostile), st.integers(-2**70, 2**70),
                     st.floats()).filter(lambda v: not range_.contains(v))


def one_line(error):
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


@pytest.fixture(scope="module")
def lm():
    model = txl_tf.TransformerXLCausalLM(tiny_model(n_token=50))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    return model


def _dataset(**elements):
    return tf.data.Dataset.from_tensor_slices(elements).batch(2, drop_remainder=True)


@pytest.fixture(scope="module")
def uncompiled():
    """A causal LM that no test compiles: each refused compile() must leave it so."""
    return txl_tf.TransformerXLCausalLM(tiny_model(n_token=50))


@pytest.mark.parametrize("name", sorted(COMPILE_RANGES))
@given(data=st.data())
def test_compile_refuses_numbers_outside_their_range_before_it_changes_anything(uncompiled, name,
                                                                                 data):
    value = data.draw(outside(COMPILE_RANGES[name]))
    assert uncompiled._replica_step is None and not uncompiled.compiled
    with pytest.raises(CausalLMInputError, match=rf"compile\({name}=") as caught:
        uncompiled.compile(optimizer="adam", **{name: value})
    assert COMPILE_RANGES[name].text() in one_line(caught.value)
    assert uncompiled._replica_step is None and not uncompiled.compiled


@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize("name", sorted(FIT_RANGES))
@given(data=st.data())
def test_fit_and_evaluate_refuse_numbers_outside_their_range(lm, method, name, data):
    value = data.draw(outside(FIT_RANGES[name]))
    before = [w.numpy().copy() for w in lm.backbone.weights]
    with pytest.raises(CausalLMInputError, match=rf"{method}\({name}=") as caught:
        getattr(lm, method)(_dataset(inputs=GOOD, labels=GOOD), verbose=0, **{name: value})
    assert FIT_RANGES[name].text() in one_line(caught.value)
    for old, new in zip(before, lm.backbone.weights):
        np.testing.assert_array_equal(old, new.numpy())


@pytest.mark.parametrize("name", sorted(GENERATE_RANGES))
@given(data=st.data())
def test_generate_refuses_numbers_outside_their_range(lm, name, data):
    value = data.draw(outside(GENERATE_RANGES[name]))
    with pytest.raises(CausalLMInputError, match=rf"generate\({name}=") as caught:
        lm.generate(np.array([1, 2, 3]), max_length=5, **{name: value})
    assert GENERATE_RANGES[name].text() in one_line(caught.value)


def test_a_negative_seg_len_is_refused_on_every_generation_path(lm):
    from txl_tf.generation.generator import Generator
    with pytest.raises(ValueError, match=r"seg_len must be an integer in \[1, "):
        Generator(lm.backbone, seg_len=-2)
    for jit in (False, True):
        with pytest.raises(CausalLMInputError, match=r"seg_len must be an integer in \[1, "):
            lm.generate(np.array([1, 2, 3]), max_length=5, seg_len=-2, jit_compile=jit)


@pytest.mark.parametrize("name", sorted(txl_tf.TransformerXLConfig.RANGES))
@given(data=st.data())
def test_config_refuses_numbers_outside_their_range(name, data):
    range_ = txl_tf.TransformerXLConfig.RANGES[name]
    value = data.draw(outside(range_))
    fields = {"n_token": 50, name: value}
    if name == "max_klen":
        fields["attn_type"] = 1  # learned tables: max_klen applies
    with pytest.raises(ConfigError, match=rf"TransformerXLConfig: {name} must be ") as caught:
        txl_tf.TransformerXLConfig(**fields)
    assert range_.text() in one_line(caught.value)


def test_a_hostile_d_model_is_refused_before_any_weight_is_made():
    if machine_memory_bytes() is None:
        pytest.skip("this machine's memory is unknown")
    config = txl_tf.TransformerXLConfig(n_token=50, n_layer=2, d_model=10**9, n_head=2,
                                        d_head=8, d_inner=16)
    with pytest.raises(MemoryEstimateError, match=r"weights alone need .*lower d_model"):
        txl_tf.TransformerXL(config)


@pytest.mark.parametrize("dataset", [
    lambda: _dataset(inputs=GOOD, labels=GOOD, sample_weight=np.ones(GOOD.shape, np.float32)),
    lambda: tf.data.Dataset.from_tensor_slices(
        (GOOD, GOOD, np.ones(GOOD.shape, np.float32))).batch(2, drop_remainder=True),
], ids=["dict_key", "keras_triple"])
def test_sample_weights_are_refused_not_dropped(lm, dataset):
    with pytest.raises(ContiguousBatchError, match="take no sample weights.*label to -1") as e:
        lm.fit(dataset(), verbose=0)
    one_line(e.value)


def test_sample_weight_argument_and_extra_keys_are_refused(lm):
    with pytest.raises(CausalLMInputError, match="no sample weights"):
        lm.fit(_dataset(inputs=GOOD, labels=GOOD), sample_weight=np.ones(4), verbose=0)
    with pytest.raises(ContiguousBatchError, match=r"keys \['extra', 'inputs', 'labels'\]"):
        lm.fit(_dataset(inputs=GOOD, labels=GOOD, extra=GOOD), verbose=0)


def test_ragged_inputs_are_one_line_saying_how_to_pad(lm):
    ragged = tf.ragged.constant([[1, 2, 3], [1, 2], [3, 4, 5], [1]])
    data = tf.data.Dataset.from_tensor_slices({"inputs": ragged, "labels": ragged}).batch(
        2, drop_remainder=True)
    with pytest.raises(ContiguousBatchError, match=r"ragged tensors.*to_tensor\(\)") as caught:
        lm.fit(data, verbose=0)
    one_line(caught.value)


def test_a_bad_id_with_steps_per_execution_is_one_line():
    model = txl_tf.TransformerXLCausalLM(tiny_model(n_token=50))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), steps_per_execution=3)
    inputs = np.arange(48).reshape(8, 6) % 50
    inputs[2:4] += 45  # the second batch, inside the compiled loop
    with pytest.raises(CausalLMInputError, match=r"input ids must be in \[0, 50\)") as caught:
        model.fit(_dataset(inputs=inputs, labels=inputs % 50), verbose=0)
    one_line(caught.value)
