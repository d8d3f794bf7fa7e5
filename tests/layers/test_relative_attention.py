"""Relative attention against explicit O(Q*K) loops over query/key pairs."""
import numpy as np
import pytest
import tensorflow as tf

from txl_tf import RelativeMultiHeadAttention, RelativePositionalEncoding, attention_mask
from txl_tf.layers.relative_attention import rel_shift, rel_shift_by_pad, rel_shift_by_slice

from reference_numpy import pairwise_attention


def naive_sinusoid(distance, d_model, clamp_len):
    """Encoding of one relative distance, straight from the formula."""
    if clamp_len > 0:
        distance = min(distance, clamp_len)
    freqs = [1.0 / 10000 ** (2 * j / d_model) for j in range(d_model // 2)]
    return np.array([np.sin(distance * f) for f in freqs] + [np.cos(distance * f) for f in freqs])


_SHIFTS = {
    "pad": rel_shift_by_pad,
    "slice": rel_shift_by_slice,
    "xla": tf.function(lambda x: rel_shift(x, for_backprop=False), jit_compile=True),  # pad
    "forward": tf.function(lambda x: rel_shift(x, for_backprop=False)),  # slice
    "backprop": tf.function(rel_shift),  # pad
}


@pytest.mark.parametrize("shift", sorted(_SHIFTS))
@pytest.mark.parametrize("mlen,qlen,clamp_len",
                         [(0, 5, -1), (4, 5, -1), (7, 3, 4), (3, 6, 2), (0, 1, -1)])
def test_rel_shift_matches_explicit_position_terms(mlen, qlen, clamp_len, shift):
    """Terms (b) + (d) computed with one einsum and rel_shift equal the per-pair formula
    (q_i + v) . W_r R[m + i - j] for every key j a query may attend to."""
    rng = np.random.default_rng(0)
    b, n, h, d = 2, 3, 4, 8
    klen = mlen + qlen
    q = rng.normal(size=(b, qlen, n, h)).astype(np.float32)
    v_bias = rng.normal(size=(n, h)).astype(np.float32)
    w_r = rng.normal(size=(d, n, h)).astype(np.float32)

    pos = RelativePositionalEncoding(d)(tf.constant(klen), clamp_len=clamp_len).numpy()  # [K, D]
    r_head = np.einsum("kd,dnh->knh", pos, w_r)
    fast = _SHIFTS[shift](tf.einsum("bqnh,knh->bnqk", q + v_bias, r_head)).numpy()

    for i in range(qlen):
        for j in range(mlen + i + 1):  # keys visible to query i
            r_ij = np.einsum("d,dnh->nh", naive_sinusoid(mlen + i - j, d, clamp_len), w_r)
            expected = np.einsum("bnh,nh->bn", q[:, i] + v_bias, r_ij)
            np.testing.assert_allclose(fast[:, :, i, j], expected, rtol=1e-4, atol=1e-4)


def test_positional_encoding_is_descending_sin_cos_halves():
    enc = RelativePositionalEncoding(6)(tf.constant(4)).numpy()
    for p in range(4):
        np.testing.assert_allclose(enc[p], naive_sinusoid(3 - p, 6, -1), atol=1e-6)


@pytest.mark.parametrize("same_length", [False, True])
@pytest.mark.parametrize("mlen", [0, 4])
def test_attention_mask_matches_definition(mlen, same_length):
    qlen = 5
    allowed = attention_mask(qlen, mlen, same_length).numpy()
    assert allowed.shape == (qlen, mlen + qlen)
    for i in range(qlen):
        for j in range(mlen + qlen):
            visible = j <= mlen + i and (not same_length or j >= i)
            assert allowed[i, j] == visible, (i, j)
    if same_length:
        assert (allowed.sum(axis=1) == mlen + 1).all()


def naive_relative_attention(layer, h, mem, u, v, clamp_len, same_length):
    """The attention sub-layer pair by pair in NumPy: position term (q_i + v) . W_r R[d]."""
    w_r, d = layer.r.numpy(), h.shape[-1]

    def position_score(q_i, distance):
        r_ij = np.einsum("d,dnh->nh", naive_sinusoid(distance, d, clamp_len), w_r)
        return ((q_i + v) * r_ij).sum(-1)

    return pairwise_attention(layer, h, mem, u, position_score, same_length)


@pytest.mark.parametrize("mlen,clamp_len,same_length",
                         [(0, -1, False), (3, -1, False), (3, 2, False), (4, -1, True)])
def test_attention_layer_matches_pairwise_computation(mlen, clamp_len, same_length):
    rng = np.random.default_rng(1)
    d, n, hd, qlen, bsz = 8, 2, 4, 4, 2
    layer = RelativeMultiHeadAttention(
        d, n, hd, kernel_initializer=tf.keras.initializers.RandomNormal(stddev=0.3))
    layer.build()
    layer.layer_norm.gamma.assign(rng.normal(1.0, 0.1, size=d))
    layer.layer_norm.beta.assign(rng.normal(0.0, 0.1, size=d))
    h = rng.normal(size=(bsz, qlen, d)).astype(np.float32)
    mem = rng.normal(size=(bsz, mlen, d)).astype(np.float32) if mlen else None
    u = rng.normal(size=(n, hd)).astype(np.float32)
    v = rng.normal(size=(n, hd)).astype(np.float32)
    klen = mlen + qlen
    pos = RelativePositionalEncoding(d)(tf.constant(klen), clamp_len=clamp_len)
    got = layer(h, mem=mem, pos_emb=pos, r_w_bias=u, r_r_bias=v,
                allowed=attention_mask(qlen, mlen, same_length)).numpy()
    expected = naive_relative_attention(layer, h, mem, u, v, clamp_len, same_length)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
