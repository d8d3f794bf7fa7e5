"""`ProjectionWeights`: the int8 rounding, and an attention layer's int8 and LoRA state written
by `save_own_variables` and read back by a layer quantized (or not adapted) the same way."""
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from txl_tf.layers.projection_weights import int8_quantize
from txl_tf.layers.relative_attention import RelativeMultiHeadAttention


@pytest.mark.parametrize("axes", [(0,), (0, 1), (1,)])
def test_int8_rounding_is_half_a_step_per_channel(axes):
    weight = np.random.RandomState(0).normal(size=(5, 3, 4)).astype(np.float32)
    values, scale = int8_quantize(weight, axes)
    assert values.dtype == np.int8
    assert scale.shape == tuple(1 if i in axes else n for i, n in enumerate(weight.shape))
    assert np.all(np.abs(values * scale - weight) <= scale / 2 + 1e-7)
    assert np.allclose(np.abs(values).astype(np.float32).max(axis=axes), 127)
    zero, zero_scale = int8_quantize(np.zeros((2, 3), np.float32), (0,))
    assert not zero.any() and np.all(zero_scale == 1)


def attention(seed=0):
    tf.keras.utils.set_random_seed(seed)
    layer = RelativeMultiHeadAttention(8, 2, 4)
    layer.build()
    return layer


def run(layer):
    h = tf.constant(np.random.RandomState(1).normal(size=(2, 3, 8)), tf.float32)
    pos = tf.constant(np.random.RandomState(2).normal(size=(3, 8)), tf.float32)
    bias = tf.zeros([2, 4])
    return layer(h, pos_emb=pos, r_w_bias=bias, r_r_bias=bias,
                 allowed=txl_tf.attention_mask(3, 0)).numpy()


def test_an_adapted_int8_layer_saves_merged_and_loads_into_a_plain_int8_one():
    layer = attention()
    layer.quantize("int8")
    assert layer.enable_lora(2) == ["o", "qkv", "r"]
    for name in ("qkv", "r", "o"):
        b = getattr(layer, f"{name}_lora_b")
        b.assign(tf.random.normal(b.shape, stddev=0.05))
    store = {}
    layer.save_own_variables(store)
    other = attention(seed=1)
    other.quantize("int8")
    other.load_own_variables(store)
    assert other.lora_projections == [] and other.quantized_projections == ["o", "qkv", "r"]
    # Re-quantized merged kernels: the outputs agree to the int8 rounding of the merged delta.
    np.testing.assert_allclose(run(other), run(layer), atol=0.05)
    float_layer = attention(seed=2)
    with pytest.raises(ValueError, match="quantized differently"):
        float_layer.load_own_variables(store)
