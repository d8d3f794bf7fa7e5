"""The fixed-size memory (`mem_valid`) gives what the growing memory gives.

A stream is read segment by segment twice: with today's growing memory (None, then min(mem_len,
M + Q) states) and with a memory of exactly mem_len positions from the first token on, its
unfilled positions masked (`TransformerXL.call(mem_valid=...)`, `fixed_memory_update`). The
log-probabilities and the filled memory must match at the first segment (empty memory), the
middle ones (partly filled) and the last (full, states dropped), for every attention variant,
in float32 and in mixed precision.
"""
import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from txl_tf.model.attention_variants import ATTENTION_VARIANTS
from txl_tf.layers.attention_mask import attention_mask
from txl_tf.layers.memory import fixed_memory_update
from txl_tf.model.transformer_xl import TransformerXL

from tiny import tiny_model

MEM_LEN, SEG, SEGMENTS = 5, 3, 4  # memory filled after 2 segments, states dropped after that

# (policy, tolerance on log-probabilities): the two memories differ only in the order of float
# sums over masked (zero) keys.
PRECISIONS = [("float32", 1e-5), ("mixed_bfloat16", 0.05), ("mixed_float16", 5e-3)]


@functools.cache
def float32_model(attn_type, clamp_len=-1):
    """The float32 model of `attn_type`, built once per process; the tests only call it."""
    return tiny_model(3, attn_type=attn_type, mem_len=MEM_LEN, tgt_len=SEG, clamp_len=clamp_len)


def model_of(attn_type, policy, clamp_len=-1):
    """The float32 model of `attn_type`, or a `policy` model holding its weights."""
    reference = float32_model(attn_type, clamp_len)
    if policy == "float32":
        return reference
    keras.utils.set_random_seed(0)
    mixed = TransformerXL(reference.config, dtype=policy)
    mixed.set_weights(reference.get_weights())
    return mixed


def fixed_call(model, tokens, memory, valid, count, same_length=False):
    """One segment with the fixed memory [L, B, M, D]: (log_probs, memory, valid)."""
    out = model(tokens, mems=tf.unstack(memory), mem_valid=valid, mem_len=MEM_LEN + SEG,
                same_length=same_length, segment_padding=SEG - count)
    memory, valid = fixed_memory_update(tf.stack(out["mems"]), valid, count, MEM_LEN)
    return out["log_probs"], memory, valid


@pytest.mark.parametrize("policy,tolerance", PRECISIONS)
@pytest.mark.parametrize("variant", ATTENTION_VARIANTS, ids=lambda v: v.name)
def test_fixed_memory_equals_growing_memory(variant, policy, tolerance):
    model = model_of(variant.attn_type, policy)
    c = model.config
    stream = np.random.RandomState(1).randint(0, c.n_token, size=(2, SEG * SEGMENTS + 2))
    growing = None
    memory = tf.zeros([c.n_layer, 2, MEM_LEN, c.d_model])
    valid = tf.constant(0)
    for s in range(SEGMENTS):
        segment = stream[:, s * SEG:(s + 1) * SEG]
        want = model(segment, mems=growing, mem_len=MEM_LEN)
        growing = want["mems"]
        got, memory, valid = fixed_call(model, segment, memory, valid, tf.constant(SEG))
        np.testing.assert_allclose(got.numpy(), want["log_probs"].numpy(), atol=tolerance,
                                   rtol=0, err_msg=f"segment {s}")
        assert int(valid) == min((s + 1) * SEG, MEM_LEN)
        for layer in range(c.n_layer):
            filled = memory[layer][:, MEM_LEN - int(valid):].numpy()
            np.testing.assert_allclose(filled, growing[layer].numpy(), atol=tolerance, rtol=0)
    # A last segment of 2 real tokens, padded to SEG: the padding is neither attended to nor
    # kept, nor counted by the absolute positions.
    tail = stream[:, SEG * SEGMENTS:]
    want = model(tail, mems=growing, mem_len=MEM_LEN)
    padded = np.concatenate([tail, np.zeros([2, SEG - 2], tail.dtype)], axis=1)
    got, memory, valid = fixed_call(model, padded, memory, valid, tf.constant(2))
    np.testing.assert_allclose(got[:, :2].numpy(), want["log_probs"].numpy(), atol=tolerance,
                               rtol=0)
    for layer in range(c.n_layer):
        np.testing.assert_allclose(memory[layer].numpy(), want["mems"][layer].numpy(),
                                   atol=tolerance, rtol=0)


@pytest.mark.parametrize("variant", ATTENTION_VARIANTS, ids=lambda v: v.name)
def test_fixed_memory_with_same_length_and_clamp_len(variant):
    """same_length counts the filled keys only; clamp_len clips the same distances."""
    model = model_of(variant.attn_type, "float32", clamp_len=2)
    c = model.config
    stream = np.random.RandomState(2).randint(0, c.n_token, size=(1, SEG * 3))
    growing = None
    memory = tf.zeros([c.n_layer, 1, MEM_LEN, c.d_model])
    valid = tf.constant(0)
    for s in range(3):
        segment = stream[:, s * SEG:(s + 1) * SEG]
        want = model(segment, mems=growing, mem_len=MEM_LEN, same_length=True)
        growing = want["mems"]
        got, memory, valid = fixed_call(model, segment, memory, valid, tf.constant(SEG),
                                        same_length=True)
        np.testing.assert_allclose(got.numpy(), want["log_probs"].numpy(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("same_length", [False, True])
@pytest.mark.parametrize("mem_valid", [0, 2, 4])
def test_mask_of_a_partly_filled_memory_is_that_of_its_filled_part(mem_valid, same_length):
    """Independently: the mask over [unfilled; filled; segment] is the growing memory's mask
    over [filled; segment] with False columns for the unfilled positions."""
    qlen, mlen = 3, 4
    got = attention_mask(qlen, mlen, same_length, tf.constant(mem_valid)).numpy()
    want = np.zeros([qlen, mlen + qlen], bool)
    for i in range(qlen):
        for j in range(mem_valid + qlen):  # j: position among the filled keys
            want[i, mlen - mem_valid + j] = j <= mem_valid + i and (not same_length or j >= i)
    np.testing.assert_array_equal(got, want)
