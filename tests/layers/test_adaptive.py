"""Adaptive embedding and adaptive softmax against direct NumPy formulas."""
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from tiny import tiny_config
from txl_tf import AdaptiveEmbedding, AdaptiveSoftmax, TransformerXL

N_TOKEN, D_MODEL = 40, 8
LAYOUTS = [
    dict(cutoffs=(), div_val=1, d_embed=8),
    dict(cutoffs=(), div_val=1, d_embed=6),  # projection because d_embed != d_model
    dict(cutoffs=(10, 25), div_val=1, d_embed=8),
    dict(cutoffs=(10, 25), div_val=2, d_embed=8),
    dict(cutoffs=(10, 25), div_val=2, d_embed=8, proj_same_dim=False),
]
INIT = dict(embeddings_initializer=keras.initializers.RandomNormal(stddev=0.5),
            projection_initializer=keras.initializers.RandomNormal(stddev=0.5))


def make_embedding(layout):
    emb = AdaptiveEmbedding(N_TOKEN, layout["d_embed"], D_MODEL, cutoffs=layout["cutoffs"],
                            div_val=layout["div_val"],
                            proj_same_dim=layout.get("proj_same_dim", True), **INIT)
    emb.build()
    return emb


def naive_embedding(emb, token):
    ends = (0,) + tuple(emb.cutoffs) + (N_TOKEN,)
    for i in range(len(ends) - 1):
        if ends[i] <= token < ends[i + 1]:
            table, proj = emb.bin_weights(i)
            row = np.asarray(table)[token - ends[i]]
            if proj is not None:
                row = row @ np.asarray(proj)
            return row * math.sqrt(D_MODEL)
    raise AssertionError(token)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_adaptive_embedding_matches_lookup_then_project(layout):
    keras.utils.set_random_seed(0)
    emb = make_embedding(layout)
    tokens = np.arange(N_TOKEN).reshape(2, 20)
    got = emb(tf.constant(tokens)).numpy()
    for b in range(2):
        for t in range(20):
            np.testing.assert_allclose(got[b, t], naive_embedding(emb, tokens[b, t]),
                                       rtol=1e-5, atol=1e-5)


def make_softmax(layout, tie_projs=None):
    keras.utils.set_random_seed(1)
    emb = make_embedding(layout)
    sm = AdaptiveSoftmax(N_TOKEN, layout["d_embed"], D_MODEL, cutoffs=layout["cutoffs"],
                         div_val=layout["div_val"], tie_projs=tie_projs, embedding=emb,
                         proj_same_dim=layout.get("proj_same_dim", True),
                         projection_initializer=INIT["projection_initializer"])
    sm.build()
    rng = np.random.default_rng(2)
    for w in sm.weights:  # non-zero biases and cluster weights, so they matter
        w.assign(rng.normal(size=w.shape) * 0.5)
    return sm


def naive_log_probs(sm, h):
    """log p over the vocabulary for one hidden vector, from the bin formula."""
    def logits(i, weight, bias):
        proj = sm.bin_projection(i)
        x = h if proj is None else np.asarray(proj) @ h
        return np.asarray(weight) @ x + np.asarray(bias)

    def log_softmax(x):
        return x - np.log(np.exp(x - x.max()).sum()) - x.max()

    if not sm.cutoffs:
        return log_softmax(logits(0, sm.embedding.bin_weights(0)[0], sm.bias))
    head_w = np.concatenate([np.asarray(sm.embedding.bin_weights(0)[0]),
                             np.asarray(sm.cluster_W)])
    head_b = np.concatenate([np.asarray(sm.cutoff_0_b), np.asarray(sm.cluster_b)])
    head = log_softmax(logits(0, head_w, head_b))
    c1 = sm.cutoffs[0]
    out = list(head[:c1])
    for i in range(1, len(sm.cutoffs) + 1):
        tail = log_softmax(logits(i, sm.embedding.bin_weights(i)[0],
                                  getattr(sm, f"cutoff_{i}_b")))
        out.extend(tail + head[c1 + i - 1])  # cluster row i-1 belongs to tail bin i
    return np.array(out)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("share", [False, True])
def test_adaptive_softmax_matches_bin_formula_and_normalises(layout, share):
    n_bins = len(layout["cutoffs"]) + 1
    sm = make_softmax(layout, tie_projs=(False,) + (share,) * (n_bins - 1))
    h = np.random.default_rng(3).normal(size=(2, 5, D_MODEL)).astype(np.float32)
    log_probs = sm(tf.constant(h)).numpy()
    assert log_probs.shape == (2, 5, N_TOKEN)
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, rtol=1e-5)
    for b in range(2):
        for t in range(5):
            np.testing.assert_allclose(log_probs[b, t], naive_log_probs(sm, h[b, t]),
                                       rtol=1e-4, atol=1e-4)
    # The NLL path (no full log-probability tensor) picks the same numbers for every token.
    labels = np.random.default_rng(4).integers(0, N_TOKEN, size=(2, 5))
    nll = sm(tf.constant(h), labels=tf.constant(labels)).numpy()
    expected = -np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(nll, expected, rtol=1e-5, atol=1e-5)


def test_no_cutoffs_is_a_plain_tied_softmax():
    sm = make_softmax(LAYOUTS[0])
    h = np.random.default_rng(5).normal(size=(1, 3, D_MODEL)).astype(np.float32)
    logits = h @ np.asarray(sm.embedding.lookup_table).T + np.asarray(sm.bias)
    expected = tf.nn.log_softmax(logits).numpy()
    np.testing.assert_allclose(sm(tf.constant(h)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_model_softmax_is_tied_to_the_embedding():
    model = TransformerXL(tiny_config(n_token=40, cutoffs=(10, 25), div_val=2,
                                      proj_share_all_but_first=True))
    assert model.softmax.embedding is model.embedding
    for i in range(3):
        assert model.softmax.embedding.bin_weights(i)[0] is model.embedding.tables[i]
    # Tail bins reuse the embedding projections (the same variables); bin 0 has its own.
    assert model.softmax.bin_projection(1) is model.embedding.projections[1]
    assert model.softmax.bin_projection(0) is not model.embedding.projections[0]
    # Every variable is counted once.
    ids = [id(v) for v in model.weights]
    assert len(ids) == len(set(ids))


def test_standalone_softmax_from_config_has_private_tables():
    sm = make_softmax(LAYOUTS[3])
    clone = AdaptiveSoftmax.from_config(sm.get_config())
    clone.build()
    assert clone.embedding is not sm.embedding
    out = clone(tf.zeros([1, 2, D_MODEL]))
    assert out.shape == (1, 2, N_TOKEN)


@pytest.mark.parametrize("tail_chunks,jit", [((1, None), False), ((3,), True)])
def test_chunked_tail_nll_is_exact_values_and_gradients(tail_chunks, jit):
    """Scoring only the tail tokens, a few at a time (1, a quarter of the positions, 3), equals
    reading the NLL off the full log-probability tensor (computed eagerly), for values and
    gradients, in a traced function with or without XLA. The chunk sizes of one compilation
    mode share one traced function."""
    layout = LAYOUTS[3]
    sm = make_softmax(layout)
    rng = np.random.default_rng(6)
    h = tf.constant(rng.normal(size=(3, 7, D_MODEL)).astype(np.float32))
    labels = tf.constant(rng.integers(0, N_TOKEN, size=(3, 7)))  # most labels are tail tokens
    weights = tf.range(1.0, 8.0)[None, :] / 10  # position-dependent, so order matters

    with tf.GradientTape() as tape:
        tape.watch(h)
        ref = -tf.gather(sm(h), labels, batch_dims=2)
        weighted_ref = tf.reduce_sum(ref * weights)
    grads_ref = tape.gradient(weighted_ref, [h] + sm.trainable_variables)

    @tf.function(jit_compile=jit)
    def every_chunk(h):
        nlls, grads = [], []
        for chunk in tail_chunks:  # read while tracing: one chunked loop per size
            sm.tail_chunk = chunk
            with tf.GradientTape() as tape:
                tape.watch(h)
                nll = sm(h, labels=labels)
                weighted = tf.reduce_sum(nll * weights)
            nlls.append(nll)
            grads.append(tape.gradient(weighted, [h] + sm.trainable_variables))
        return nlls, grads

    nlls, grads = every_chunk(h)
    assert len(nlls) == len(grads) == len(tail_chunks)
    for nll, chunk_grads in zip(nlls, grads):
        np.testing.assert_allclose(nll.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
        assert len(chunk_grads) == len(grads_ref)
        for g, g_ref in zip(chunk_grads, grads_ref):
            np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(),
                                       tf.convert_to_tensor(g_ref).numpy(), rtol=1e-4,
                                       atol=1e-5)


@pytest.mark.parametrize("layout", [LAYOUTS[0], LAYOUTS[3]])
def test_negative_labels_are_padding_with_zero_nll(layout):
    sm = make_softmax(layout)
    h = tf.constant(np.random.default_rng(7).normal(size=(2, 4, D_MODEL)).astype(np.float32))
    labels = np.array([[3, 15, 30, -1], [-1, -1, 12, 39]])
    nll = sm(h, labels=tf.constant(labels)).numpy()
    full = sm(h, labels=tf.constant(np.maximum(labels, 0))).numpy()
    np.testing.assert_array_equal(nll[labels < 0], 0.0)
    np.testing.assert_allclose(nll[labels >= 0], full[labels >= 0], rtol=1e-6)
