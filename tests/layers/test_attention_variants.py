"""The ablation's position encodings as layers (attn_type 1 and 3) and the half-loss mask,
against explicit per-pair / per-position NumPy computations."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from txl_tf import attention_mask
from txl_tf.layers.absolute_position_embedding import (LearnedPositionEmbedding,
                                                       absolute_table_rows)
from txl_tf.layers.learned_relative_attention import (LearnedRelativeMultiHeadAttention,
                                                      learned_table_rows)
from txl_tf.layers.transformer_xl_block import TransformerXLBlock
from txl_tf.loss.half_loss import half_loss_mask, weighted_mean_loss

from reference_numpy import pairwise_attention


def naive_relative_row(distance, table_len, clamp_len):
    """Row of distance `distance` in the reference's sliced-and-padded table: keep the last
    clamp_len rows (clamp_len > 0), then the last row is distance 0 and every distance longer
    than the rows kept reads the first row kept."""
    rows = list(range(table_len))
    if clamp_len > 0:
        rows = rows[-clamp_len:]
    index_from_end = min(distance, len(rows) - 1)
    return rows[len(rows) - 1 - index_from_end]


@pytest.mark.parametrize("klen,table_len,clamp_len",
                         [(5, 8, -1), (8, 8, -1), (11, 4, -1), (9, 6, 3), (4, 6, 10), (1, 1, -1)])
def test_learned_table_rows_follow_the_reference_slicing(klen, table_len, clamp_len):
    rows = learned_table_rows(klen, table_len, clamp_len).numpy()
    expected = [naive_relative_row(klen - 1 - p, table_len, clamp_len) for p in range(klen)]
    assert rows.tolist() == expected


def test_distances_beyond_the_table_share_the_longest_trained_distance():
    """Table of 4 rows: distances 0, 1, 2 have their own rows 3, 2, 1; every distance >= 3 reads
    row 0. With clamp_len=2 only rows 2, 3 are used: every distance >= 1 reads row 2."""
    assert learned_table_rows(10, 4).numpy().tolist() == [0] * 7 + [1, 2, 3]
    assert learned_table_rows(10, 4, clamp_len=2).numpy().tolist() == [2] * 9 + [3]


def naive_learned_relative_attention(layer, h, mem, clamp_len, same_length):
    """The Shaw et al. sub-layer pair by pair in NumPy (post-LN, no dropout):
    score(i, j) = ((q_i + u) . k_j + q_i . E[row(d)] + b[row(d)]) / sqrt(H), d = M + i - j."""
    r_emb, u, r_bias = layer.r_emb.numpy(), layer.r_w_bias.numpy(), layer.r_bias.numpy()

    def position_score(q_i, distance):
        row = naive_relative_row(distance, layer.max_klen, clamp_len)
        return (q_i * r_emb[row]).sum(-1) + r_bias[row]

    return pairwise_attention(layer, h, mem, u, position_score, same_length)


def random_learned_layer(max_klen, seed=1, d=8, n=2, hd=4):
    rng = np.random.default_rng(seed)
    layer = LearnedRelativeMultiHeadAttention(
        d, n, hd, max_klen=max_klen,
        kernel_initializer=keras.initializers.RandomNormal(stddev=0.3))
    layer.build()
    layer.layer_norm.gamma.assign(rng.normal(1.0, 0.1, size=d))
    layer.layer_norm.beta.assign(rng.normal(0.0, 0.1, size=d))
    layer.r_bias.assign(rng.normal(0.0, 0.5, size=(max_klen, n)))  # zeros at initialisation
    return layer


@pytest.mark.parametrize("mlen,max_klen,clamp_len,same_length", [
    (0, 4, -1, False),  # no memory, the table covers every distance
    (3, 7, -1, False),  # memory, the table covers every distance
    (5, 3, -1, False),  # distances up to 8 with 3 rows: clamped to the longest trained one
    (4, 8, 2, False),   # clamp_len keeps only the last 2 rows
    (4, 8, -1, True),   # same_length
])
def test_learned_relative_attention_matches_pairwise_computation(mlen, max_klen, clamp_len,
                                                                 same_length):
    rng = np.random.default_rng(2)
    qlen, bsz, d = 4, 2, 8
    layer = random_learned_layer(max_klen)
    h = rng.normal(size=(bsz, qlen, d)).astype(np.float32)
    mem = rng.normal(size=(bsz, mlen, d)).astype(np.float32) if mlen else None
    allowed = attention_mask(qlen, mlen, same_length)
    expected = naive_learned_relative_attention(layer, h, mem, clamp_len, same_length)
    got = layer(h, mem=mem, allowed=allowed, clamp_len=clamp_len).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    # The gradient form of rel_shift (training=True with no dropout) gives the same numbers.
    trained = layer(h, mem=mem, allowed=allowed, clamp_len=clamp_len, training=True).numpy()
    np.testing.assert_allclose(trained, expected, rtol=1e-4, atol=1e-4)


def test_learned_relative_attention_xla_equals_plain():
    rng = np.random.default_rng(3)
    layer = random_learned_layer(5)
    h = tf.constant(rng.normal(size=(2, 4, 8)), tf.float32)
    mem = tf.constant(rng.normal(size=(2, 6, 8)), tf.float32)
    allowed = attention_mask(4, 6)

    def run(x, m):
        return layer(x, mem=m, allowed=allowed, clamp_len=-1)

    plain = run(h, mem).numpy()
    xla = tf.function(run, jit_compile=True)(h, mem).numpy()
    np.testing.assert_allclose(xla, plain, rtol=1e-5, atol=1e-5)


def test_learned_relative_attention_is_causal():
    rng = np.random.default_rng(4)
    layer = random_learned_layer(6)
    h = rng.normal(size=(1, 5, 8)).astype(np.float32)
    mem = rng.normal(size=(1, 3, 8)).astype(np.float32)
    allowed = attention_mask(5, 3)
    before = layer(h, mem=mem, allowed=allowed).numpy()
    changed = h.copy()
    changed[:, 3] += 1.0
    after = layer(changed, mem=mem, allowed=allowed).numpy()
    np.testing.assert_array_equal(before[:, :3], after[:, :3])
    assert np.abs(before[:, 3:] - after[:, 3:]).max() > 1e-3


@pytest.mark.parametrize("klen,table_len", [(6, 10), (10, 10), (13, 10), (1, 3)])
def test_absolute_rows_are_the_last_klen_rows_padded_with_the_first(klen, table_len):
    """The reference's memory reads rows [:-Q] (last M of them, padded with row 0) and the
    segment rows [-Q:]: together key j reads row T-K+j, or row 0 before the table starts."""
    rows = absolute_table_rows(klen, table_len).numpy().tolist()
    table = list(range(table_len))
    expected = ([table[0]] * (klen - table_len) + table) if klen > table_len else table[-klen:]
    assert rows == expected


def test_learned_position_embedding_reads_its_table():
    emb = LearnedPositionEmbedding(max_klen=5, d_model=4,
                                   embeddings_initializer=keras.initializers.RandomNormal())
    emb.build()
    table = emb.embeddings.numpy()
    np.testing.assert_array_equal(emb(tf.constant(3)).numpy(), table[2:])
    np.testing.assert_array_equal(emb(tf.constant(7)).numpy(),
                                  np.concatenate([table[:1], table[:1], table]))


def test_block_builds_the_attention_it_is_named():
    block = TransformerXLBlock(8, 2, 4, 16, attention="txl_tf>LearnedRelativeMultiHeadAttention",
                               attention_options={"max_klen": 6})
    block.build()
    assert isinstance(block.attention, LearnedRelativeMultiHeadAttention)
    names = sorted(v.path.split("/")[-1] for v in block.attention.weights)
    assert {"r_emb", "r_w_bias", "r_bias"} <= set(names) and "r" not in names
    out = block(tf.zeros([2, 3, 8]), mem=tf.zeros([2, 4, 8]), allowed=attention_mask(3, 4))
    assert out.shape == (2, 3, 8)


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("qlen", [1, 2, 5, 8])
def test_half_loss_mask_keeps_the_recent_half(qlen):
    nll = tf.zeros([3, qlen])
    weights = half_loss_mask(nll).numpy()
    expected = np.array([[1.0 if i >= qlen // 2 else 0.0 for i in range(qlen)]] * 3)
    np.testing.assert_array_equal(weights, expected)
    assert weights.sum(axis=1).tolist() == [qlen - qlen // 2] * 3


def test_half_loss_mean_counts_only_second_half_non_padding_tokens():
    rng = np.random.default_rng(5)
    nll = rng.uniform(0.5, 3.0, size=(2, 6)).astype(np.float32)
    labels = np.ones((2, 6), np.int32)
    labels[1, 4:] = -1  # padding at the end of the second stream
    nll[1, 4:] = 0.0  # the model gives padding an NLL of 0
    weights = half_loss_mask(tf.constant(nll), tf.constant(labels))
    counted = [(b, i) for b in range(2) for i in range(6) if i >= 3 and labels[b, i] >= 0]
    expected = sum(nll[b, i] for b, i in counted) / len(counted)
    np.testing.assert_allclose(weighted_mean_loss(nll, weights).numpy(), expected, rtol=1e-6)
    assert float(weighted_mean_loss(nll, tf.zeros_like(nll))) == 0.0


def test_half_loss_mask_works_in_a_compiled_function_with_unknown_length():
    fn = tf.function(lambda x: half_loss_mask(x),
                     input_signature=[tf.TensorSpec([None, None], tf.float32)], jit_compile=True)
    np.testing.assert_array_equal(fn(tf.zeros([1, 4])).numpy(), [[0.0, 0.0, 1.0, 1.0]])
