"""The TransformerXL model: causality, recurrence, memory, compilation, precision, sizes."""
import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.common import global_state

import txl_tf
from tiny import tiny_config, tiny_model, train_step
from txl_tf import TransformerXL, TransformerXLConfig


def random_tokens(shape, n_token=50, seed=0):
    return tf.constant(np.random.default_rng(seed).integers(0, n_token, size=shape), tf.int32)


_MODELS = {}


def shared_model(**changes):
    """`tiny_model(**changes)`, built once per config in this module and shared by the tests that
    only read it (calls, gradients, saves; no dropout state advanced). The global seed is set
    again on every call, as `tiny_model` sets it."""
    key = tiny_config(**changes).to_json()
    if key not in _MODELS:
        _MODELS[key] = tiny_model(**changes)
    keras.utils.set_random_seed(0)
    return _MODELS[key]


CONFIG_VARIANTS = [
    dict(),
    dict(cutoffs=(10, 30), div_val=1),
    dict(cutoffs=(10, 30), div_val=2, proj_share_all_but_first=True, untie_r=True),
    dict(pre_lnorm=True, clamp_len=3),
]


@pytest.mark.parametrize("changes", CONFIG_VARIANTS)
def test_causality_future_tokens_never_change_the_past(changes):
    model = shared_model(**changes)
    tokens = random_tokens([2, 8])
    mems = model.init_mems(2)
    before = model(tokens, mems=mems)["log_probs"].numpy()
    t = 5
    changed = tokens.numpy().copy()
    changed[:, t] = (changed[:, t] + 7) % 50
    after = model(tf.constant(changed), mems=mems)["log_probs"].numpy()
    np.testing.assert_array_equal(before[:, :t], after[:, :t])
    assert np.abs(before[:, t:] - after[:, t:]).max() > 1e-4


@pytest.mark.parametrize("changes", CONFIG_VARIANTS)
def test_segments_with_memory_equal_one_long_pass(changes):
    """Three segments of 4 with a memory that holds all earlier context give the same per-token
    NLL as one pass over the 12 tokens."""
    model = shared_model(mem_len=8, **changes)
    tokens, labels = random_tokens([2, 12], seed=1), random_tokens([2, 12], seed=2)
    full = model(tokens, labels=labels)["nll"].numpy()
    mems, pieces = None, []
    for start in range(0, 12, 4):
        out = model(tokens[:, start:start + 4], mems=mems, labels=labels[:, start:start + 4])
        mems = out["mems"]
        pieces.append(out["nll"].numpy())
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, rtol=1e-5, atol=1e-5)


def test_short_memory_forgets_what_a_long_pass_sees():
    """With mem_len smaller than the earlier context, the segment NLL differs from the long pass:
    the equivalence above is not vacuous."""
    model = shared_model(mem_len=2)
    tokens, labels = random_tokens([2, 8], seed=3), random_tokens([2, 8], seed=4)
    full = model(tokens, labels=labels)["nll"].numpy()
    mems = model(tokens[:, :4])["mems"]
    second = model(tokens[:, 4:], mems=mems, labels=labels[:, 4:])["nll"].numpy()
    assert np.abs(second - full[:, 4:]).max() > 1e-4


def test_memory_is_the_input_of_each_layer():
    model = shared_model(mem_len=4)
    tokens = random_tokens([2, 6])
    out = model(tokens, mems=model.init_mems(2))
    embedded = model.embedding(tokens).numpy()  # input of layer 0 (no dropout)
    np.testing.assert_allclose(out["mems"][0].numpy(), embedded[:, -4:], rtol=1e-6)
    h1 = model.blocks[0](
        model.embedding(tokens), mem=model.init_mems(2)[0],
        pos_emb=model.positional_encoding(tf.constant(10)),
        r_w_bias=model.r_w_bias, r_r_bias=model.r_r_bias,
        allowed=txl_tf.attention_mask(6, 4)).numpy()
    np.testing.assert_allclose(out["mems"][1].numpy(), h1[:, -4:], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mem_len,qlen", [(3, 6), (6, 6), (10, 6), (0, 6)])
def test_memory_shapes(mem_len, qlen):
    model = shared_model(mem_len=mem_len)
    tokens = random_tokens([3, qlen])
    out = model(tokens, mems=model.init_mems(3))
    assert len(out["mems"]) == 2
    for mem in out["mems"]:
        assert mem.shape == (3, mem_len, 16) and mem.dtype == tf.float32
    # Without memory the new memory grows up to mem_len.
    grown = model(tokens)["mems"]
    assert grown[0].shape == (3, min(mem_len, qlen), 16)
    regrown = model(tokens, mems=grown)["mems"]
    assert regrown[0].shape == (3, min(mem_len, 2 * qlen), 16)


def test_no_gradient_reaches_the_memory():
    model = shared_model()
    tokens, labels = random_tokens([2, 6], seed=5), random_tokens([2, 6], seed=6)
    with tf.GradientTape(persistent=True) as tape:
        first = model(tokens, labels=labels, training=True)
        second = model(tokens, mems=first["mems"], labels=labels, training=True)
        loss = tf.reduce_mean(second["nll"])
        mem_sum = tf.add_n([tf.reduce_sum(m) for m in first["mems"]])
    assert all(g is None for g in tape.gradient(mem_sum, model.trainable_variables))
    grads_through = tape.gradient(loss, model.trainable_variables)
    # The same loss with the memory fed in as a constant gives the same gradients.
    constant_mems = [tf.constant(m.numpy()) for m in first["mems"]]
    with tf.GradientTape() as tape2:
        loss2 = tf.reduce_mean(model(tokens, mems=constant_mems, labels=labels,
                                     training=True)["nll"])
    for g1, g2 in zip(grads_through, tape2.gradient(loss2, model.trainable_variables)):
        np.testing.assert_allclose(tf.convert_to_tensor(g1).numpy(),
                                   tf.convert_to_tensor(g2).numpy(), rtol=1e-5, atol=1e-7)


# Two layers (the memory of both carried), with and without the adaptive softmax's tail bins.
XLA_CHANGES = [dict(), dict(cutoffs=(10, 30), div_val=2, untie_r=True)]


def xla_inputs():
    return random_tokens([2, 6], seed=7), random_tokens([2, 6], seed=8)


@pytest.fixture(scope="module")
def xla_steps():
    """[(model, its step's (loss, gradients, new memory) computed by XLA)] for each of
    XLA_CHANGES, both steps compiled together in one XLA program (one compilation instead of
    two; the models share no variable)."""
    models = [shared_model(**changes) for changes in XLA_CHANGES]
    tokens, labels = xla_inputs()

    @tf.function(jit_compile=True)
    def both_steps(both_mems):
        return [train_step(model)(tokens, labels, mems)
                for model, mems in zip(models, both_mems)]

    return list(zip(models, both_steps([model.init_mems(2) for model in models])))


@pytest.mark.parametrize("case", range(len(XLA_CHANGES)), ids=["plain", "adaptive"])
def test_xla_step_equals_plain_step(xla_steps, case):
    model, (loss_b, grads_b, mems_b) = xla_steps[case]
    assert model.config == tiny_config(**XLA_CHANGES[case]) and model.config.n_layer == 2
    tokens, labels = xla_inputs()
    loss_a, grads_a, mems_a = train_step(model)(tokens, labels, model.init_mems(2))  # eager
    np.testing.assert_allclose(loss_a.numpy(), loss_b.numpy(), rtol=1e-5)
    assert len(grads_a) == len(grads_b) == len(model.trainable_variables)
    for g_a, g_b in zip(grads_a, grads_b):
        np.testing.assert_allclose(tf.convert_to_tensor(g_a).numpy(),
                                   tf.convert_to_tensor(g_b).numpy(), rtol=1e-3, atol=1e-5)
    assert len(mems_a) == len(mems_b) == 2
    for m_a, m_b in zip(mems_a, mems_b):
        np.testing.assert_allclose(m_a.numpy(), m_b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy,tolerance", [("mixed_bfloat16", 0.1), ("mixed_float16", 0.02)])
def test_mixed_precision_stays_close_to_float32(policy, tolerance):
    reference = shared_model(cutoffs=(10, 30), div_val=2, init_std=0.05)
    keras.utils.set_random_seed(0)
    mixed = TransformerXL(reference.config, dtype=policy)
    mixed.set_weights(reference.get_weights())
    tokens, labels = random_tokens([2, 6], seed=9), random_tokens([2, 6], seed=10)
    mems = reference.init_mems(2)
    want = reference(tokens, mems=mems, labels=labels)
    got = mixed(tokens, mems=mems, labels=labels)
    assert got["nll"].dtype == tf.float32 and got["mems"][0].dtype == tf.float32
    assert all(v.dtype == "float32" for v in mixed.weights)
    assert np.isfinite(got["nll"].numpy()).all()
    np.testing.assert_allclose(got["nll"].numpy(), want["nll"].numpy(), rtol=tolerance,
                               atol=tolerance)
    # Training mode works too (dropout, float32 loss).
    out = mixed(tokens, mems=got["mems"], labels=labels, training=True)
    assert np.isfinite(out["nll"].numpy()).all()


def test_dropout_only_in_training():
    model = tiny_model(dropout=0.3, dropatt=0.3)
    tokens = random_tokens([2, 6])
    a = model(tokens)["log_probs"].numpy()
    np.testing.assert_array_equal(a, model(tokens)["log_probs"].numpy())
    b = model(tokens, training=True)["log_probs"].numpy()
    assert np.abs(a - b).max() > 1e-4


def test_vanilla_transformer_without_memory_is_causal():
    model = shared_model(attn_type=2, mem_len=0)
    assert [m.shape for m in model.init_mems(2)] == [(2, 0, 16)] * 2
    assert not any("/r:" in v.name or v.path.endswith("/r") for v in model.weights)
    tokens = random_tokens([2, 6])
    out = model(tokens)
    assert [m.shape for m in out["mems"]] == [(2, 0, 16)] * 2
    assert out["log_probs"].shape == (2, 6, 50)
    changed = tokens.numpy().copy()
    changed[:, 4] = (changed[:, 4] + 1) % 50
    after = model(tf.constant(changed))["log_probs"].numpy()
    np.testing.assert_array_equal(out["log_probs"].numpy()[:, :4], after[:, :4])


def _unvalued_model(config):
    """`config`'s model with its variables' shapes but no values: built in a stateless scope that
    defers their initialisation, so none of the (up to 277M) values is drawn; the deferred
    variables are dropped from Keras's pending list afterwards."""
    pending = list(global_state.get_global_attribute("uninitialized_variables", []))
    try:
        with keras.StatelessScope(initialize_variables=False):
            model = TransformerXL(config)
    finally:
        global_state.set_global_attribute("uninitialized_variables", pending)
    assert all(w._value is None for w in model.weights)  # nothing was initialised
    return model


def _count(config):
    return _unvalued_model(config).count_params()


@pytest.mark.parametrize("name,config,millions", [
    ("enwik8 12-layer", TransformerXLConfig(
        n_token=204, n_layer=12, d_model=512, n_head=8, d_head=64, d_inner=2048), 41.1),
    ("WikiText-103 base", TransformerXLConfig(
        n_token=267735, n_layer=16, d_model=410, n_head=10, d_head=41, d_inner=2100,
        cutoffs=(20000, 40000, 200000), div_val=1, untie_r=True,
        proj_share_all_but_first=True), 151.1),
    ("enwik8 24-layer", TransformerXLConfig(
        n_token=204, n_layer=24, d_model=1024, n_head=8, d_head=128, d_inner=3072), 277.2),
])
def test_parameter_counts_of_the_papers_models(name, config, millions):
    """The reference's counts (reference-implementation.md section 4)."""
    assert round(_count(config) / 1e6, 1) == millions, name


def test_wt103_large_layout_matches_released_checkpoint_shapes():
    """div_val 4, proj_same_dim, shared tail projections: the released wt103 large layout."""
    config = TransformerXLConfig(
        n_token=267735, n_layer=1, d_model=1024, n_head=16, d_head=64, d_inner=4096,
        cutoffs=(20000, 40000, 200000), div_val=4, untie_r=True, proj_share_all_but_first=True)
    model = _unvalued_model(config)
    emb = model.embedding
    assert [tuple(t.shape) for t in emb.tables] == [
        (20000, 1024), (20000, 256), (160000, 64), (67735, 16)]
    assert [tuple(p.shape) for p in emb.projections] == [
        (1024, 1024), (256, 1024), (64, 1024), (16, 1024)]
    sm = model.softmax
    assert [None if p is None else tuple(p.shape) for p in sm.out_projections] == [
        (1024, 1024), None, None, None]
    assert tuple(sm.cluster_W.shape) == (3, 1024)
    assert tuple(model.r_w_bias.shape) == (1, 16, 64)


def test_call_rejects_wrong_number_of_memories():
    model = tiny_model()
    with pytest.raises(ValueError, match="one tensor per layer"):
        model(random_tokens([2, 6]), mems=model.init_mems(2)[:1])


def test_model_config_round_trip_and_save_load(tmp_path):
    model = shared_model(cutoffs=(10, 30), div_val=2, untie_r=True)
    clone = TransformerXL.from_config(model.get_config())
    assert clone.config == model.config
    tokens, labels = random_tokens([2, 6]), random_tokens([2, 6], seed=1)
    txl_tf.save_model(model, str(tmp_path))
    loaded = txl_tf.load_model(str(tmp_path))
    np.testing.assert_array_equal(model(tokens, labels=labels)["nll"].numpy(),
                                  loaded(tokens, labels=labels)["nll"].numpy())
    with pytest.raises(txl_tf.ModelDirError, match="does not fit"):
        txl_tf.load_model(str(tmp_path), d_inner=20)
    with pytest.raises(txl_tf.ModelDirError, match="not a txl-tf model directory"):
        txl_tf.load_model(str(tmp_path / "missing"))
    # Run settings may change at load time: a longer memory for evaluation.
    long = txl_tf.load_model(str(tmp_path), mem_len=20, same_length=True)
    assert long.init_mems(1)[0].shape == (1, 20, 16)
