"""TransformerXL with the ablation's encodings attn_type 1 (Shaw et al.), 2 (Vaswani et al.) and
3 (Al-Rfou et al.): a naive NumPy forward pass, causality, recurrence, XLA, mixed precision,
config and save/load."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from txl_tf import ConfigError, TransformerXL, TransformerXLConfig
from txl_tf.commands import import_weights
from txl_tf.convert.errors import WeightImportError

from tiny import tiny_config, train_step

VARIANTS = [1, 2, 3]


def small_config(**changes):
    """`tiny_config` with n_token 40, tgt_len 4, mem_len 8, and `changes`."""
    return tiny_config(**{"n_token": 40, "tgt_len": 4, "mem_len": 8, **changes})


_MODELS = {}


def make_model(seed=0, **changes):
    """The model of `small_config(**changes)` with weights drawn after seeding `seed`, built once
    per config and seed in this module and shared: the tests only read it (calls, gradients,
    saves). The global seed is set again on every call, as if the model were built anew."""
    key = (seed, small_config(**changes).to_json())
    if key not in _MODELS:
        _MODELS[key] = _build_model(seed, **changes)
    keras.utils.set_random_seed(seed)
    return _MODELS[key]


def _build_model(seed, **changes):
    keras.utils.set_random_seed(seed)
    model = TransformerXL(small_config(**changes))
    for block in model.blocks:  # the relative biases start at zero: make them matter
        if hasattr(block.attention, "r_bias"):
            block.attention.r_bias.assign(
                np.random.default_rng(seed).normal(0.0, 0.5, block.attention.r_bias.shape))
    return model


def random_tokens(shape, seed=0, n_token=40):
    return tf.constant(np.random.default_rng(seed).integers(0, n_token, size=shape), tf.int32)


# ------------------------------------------------------------------------------------------------
# Naive forward pass: every attention score pair by pair, every position row spelt out.
def _layer_norm(x, norm):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + norm.epsilon) * norm.gamma.numpy()
            + norm.beta.numpy())


def _relative_row(distance, table_len, clamp_len):
    used = min(table_len, clamp_len) if clamp_len > 0 else table_len
    return table_len - 1 - min(distance, used - 1)


def _absolute_sinusoids(klen, d_model, clamp_len):
    """attn_type 2: row j encodes key j of [memory; segment] at position K-1-j (newest at 0),
    clipped to clamp_len when > 0; sin halves then cos halves, one entry at a time."""
    rows = np.zeros((klen, d_model))
    for j in range(klen):
        position = klen - 1 - j
        if clamp_len > 0:
            position = min(position, clamp_len)
        for i in range(d_model // 2):
            angle = position / 10000.0 ** (2 * i / d_model)
            rows[j, i], rows[j, d_model // 2 + i] = np.sin(angle), np.cos(angle)
    return rows


def _naive_attention(att, h, mem, extra_score):
    """Post-LN attention sub-layer; extra_score(q_i, k_j, distance) -> [N] adds to q_i . k_j."""
    w_qkv, w_o = att.qkv.numpy(), att.o.numpy()
    mlen = mem.shape[1]
    cat = np.concatenate([mem, h], axis=1)
    out = np.zeros_like(h)
    for b in range(h.shape[0]):
        vec = np.zeros((h.shape[1],) + w_o.shape[:2])
        for i in range(h.shape[1]):
            q_i = np.einsum("d,dnh->nh", h[b, i], w_qkv[:, 0])
            keys = range(mlen + i + 1)
            scores = np.stack([(q_i * np.einsum("d,dnh->nh", cat[b, j], w_qkv[:, 1])).sum(-1)
                               + extra_score(q_i, np.einsum("d,dnh->nh", cat[b, j], w_qkv[:, 1]),
                                             mlen + i - j) for j in keys], -1)
            scores /= np.sqrt(w_o.shape[1])
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            for col, j in enumerate(keys):
                vec[i] += probs[:, col:col + 1] * np.einsum("d,dnh->nh", cat[b, j], w_qkv[:, 2])
        out[b] = _layer_norm(h[b] + np.einsum("qnh,nhd->qd", vec, w_o), att.layer_norm)
    return out


def _naive_feed_forward(ff, x):
    inner = np.maximum(x @ ff.layer_1.kernel.numpy() + ff.layer_1.bias.numpy(), 0.0)
    return _layer_norm(x + inner @ ff.layer_2.kernel.numpy() + ff.layer_2.bias.numpy(),
                       ff.layer_norm)


def naive_forward(model, tokens, mems, mem_len, clamp_len=-1):
    """(log_probs [B, Q, V], new mems) of attn_type 1, 2 or 3; the embedding and the softmax are
    the model's own layers (tested elsewhere), everything between them is NumPy."""
    c = model.config
    h = model.embedding(tokens).numpy().astype(np.float64)
    mlen = 0 if mems is None else mems[0].shape[1]
    if c.attn_type == 2:
        sinusoids = _absolute_sinusoids(mlen + h.shape[1], c.d_model, clamp_len)
        h = h + sinusoids[mlen:]  # the stored layer-0 memory includes these
    new_mems = []
    for i, block in enumerate(model.blocks):
        mem = np.zeros((h.shape[0], 0, h.shape[2])) if mems is None else mems[i].numpy()
        states = np.concatenate([mem, h], axis=1)
        new_mems.append(states[:, max(0, states.shape[1] - mem_len):])
        att = block.attention
        if c.attn_type == 2:
            read = mem + sinusoids[:mlen] if i == 0 else mem  # added where read, not stored
            h = _naive_attention(att, h, read, lambda q_i, k_j, d: 0.0)
        elif c.attn_type == 1:
            r_emb, r_bias, u = att.r_emb.numpy(), att.r_bias.numpy(), att.r_w_bias.numpy()

            def extra(q_i, k_j, d):
                row = _relative_row(d, c.max_klen, clamp_len)
                return (u * k_j).sum(-1) + (q_i * r_emb[row]).sum(-1) + r_bias[row]
            h = _naive_attention(att, h, mem, extra)
        else:
            table = model.absolute_embeddings[i].embeddings.numpy()
            klen, mlen = mem.shape[1] + h.shape[1], mem.shape[1]
            rows = [max(c.max_klen - klen + j, 0) for j in range(klen)]
            h = _naive_attention(att, h + table[rows[mlen:]], mem + table[rows[:mlen]],
                                 lambda q_i, k_j, d: 0.0)
        h = _naive_feed_forward(block.feed_forward, h)
    log_probs = model.softmax(tf.constant(h, tf.float32)).numpy()
    return log_probs, new_mems


@pytest.mark.parametrize("attn_type", VARIANTS)
@pytest.mark.parametrize("mem_len,clamp_len", [(0, -1), (0, 2), (6, -1), (6, 3)])
def test_model_matches_naive_forward(attn_type, mem_len, clamp_len):
    """Two segments: the second reads the first's memory (mem_len > 0) or none (mem_len = 0)."""
    model = make_model(attn_type=attn_type, mem_len=mem_len, tgt_len=4)
    mems = model.init_mems(2) if mem_len else None
    for seed in (1, 2):
        tokens = random_tokens([2, 4], seed=seed)
        out = model(tokens, mems=mems, clamp_len=clamp_len)
        want_lp, want_mems = naive_forward(model, tokens, mems, mem_len, clamp_len)
        np.testing.assert_allclose(out["log_probs"].numpy(), want_lp, rtol=2e-4, atol=2e-4)
        assert len(out["mems"]) == 2
        for got, want in zip(out["mems"], want_mems):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
        mems = out["mems"] if mem_len else None


def test_attn_type_1_longer_evaluation_memory_matches_naive_clamping():
    """Trained table of 6 rows (tgt 2 + mem 4), evaluated with a memory of 9: every distance
    >= 5 reads the longest trained distance's row."""
    model = make_model(attn_type=1, tgt_len=2, mem_len=4)
    assert model.config.max_klen == 6
    mems = [tf.constant(np.random.default_rng(i).normal(size=(2, 9, 16)), tf.float32)
            for i in range(2)]
    tokens = random_tokens([2, 3], seed=3)
    out = model(tokens, mems=mems, mem_len=9)
    want_lp, _ = naive_forward(model, tokens, mems, 9)
    np.testing.assert_allclose(out["log_probs"].numpy(), want_lp, rtol=2e-4, atol=2e-4)


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attn_type", VARIANTS)
@pytest.mark.parametrize("mem_len", [0, 8])
def test_causality_future_tokens_never_change_the_past(attn_type, mem_len):
    model = make_model(attn_type=attn_type, mem_len=mem_len)
    tokens = random_tokens([2, 6])
    mems = model.init_mems(2)
    assert [m.shape for m in mems] == [(2, mem_len, 16)] * 2
    before = model(tokens, mems=mems)["log_probs"].numpy()
    changed = tokens.numpy().copy()
    changed[:, 4] = (changed[:, 4] + 7) % 40
    after = model(tf.constant(changed), mems=mems)["log_probs"].numpy()
    np.testing.assert_array_equal(before[:, :4], after[:, :4])
    assert np.abs(before[:, 4:] - after[:, 4:]).max() > 1e-4


def _segmented_and_long(model, mem_len, seg=4, total=12):
    tokens, labels = random_tokens([2, total], seed=4), random_tokens([2, total], seed=5)
    full = model(tokens, labels=labels, mem_len=mem_len)["nll"].numpy()
    mems, pieces = None, []
    for start in range(0, total, seg):
        out = model(tokens[:, start:start + seg], mems=mems,
                    labels=labels[:, start:start + seg], mem_len=mem_len)
        mems = out["mems"]
        pieces.append(out["nll"].numpy())
    return np.concatenate(pieces, axis=1), full


@pytest.mark.parametrize("tgt_len,mem_len", [(4, 8), (2, 2)])
def test_attn_type_1_segments_with_memory_equal_one_long_pass(tgt_len, mem_len):
    """Relative positions: a memory holding all earlier context reproduces one long pass, both
    when the table covers every distance (12 rows) and when it does not (4 rows: distances
    beyond it are clamped identically in both computations)."""
    model = make_model(attn_type=1, tgt_len=tgt_len, mem_len=mem_len)
    segmented, full = _segmented_and_long(model, mem_len=8)
    np.testing.assert_allclose(segmented, full, rtol=1e-4, atol=1e-5)


def test_attn_type_3_memory_is_not_one_long_pass():
    """Absolute positions: the first segment's states were computed at the table's last rows
    but the long pass reads them at its first rows (temporal confusion), so the identity of the
    relative encodings fails; a single segment alone is the same in both."""
    model = make_model(attn_type=3, tgt_len=4, mem_len=8)  # 12 rows: covers the long pass
    segmented, full = _segmented_and_long(model, mem_len=8)
    assert np.abs(segmented - full).max() > 1e-2
    relative = make_model(attn_type=1, tgt_len=4, mem_len=8)
    segmented_rel, full_rel = _segmented_and_long(relative, mem_len=8)
    np.testing.assert_allclose(segmented_rel, full_rel, rtol=1e-4, atol=1e-5)


def test_attn_type_2_memory_is_not_one_long_pass():
    """Vaswani et al. sinusoids with memory: every segment's tokens were embedded at positions
    3 .. 0 and the layer-0 memory gets the positions of the keys added on top, so even the last
    segment, whose memory holds all 8 earlier tokens, differs from one long pass over the 12
    tokens (temporal confusion); with attn_type 0 the same weights reproduce the long pass."""
    model = make_model(attn_type=2, tgt_len=4, mem_len=8)
    segmented, full = _segmented_and_long(model, mem_len=8)
    assert np.abs(segmented[:, 8:] - full[:, 8:]).max() > 1e-2
    ours = make_model(attn_type=0, tgt_len=4, mem_len=8)
    segmented_ours, full_ours = _segmented_and_long(ours, mem_len=8)
    np.testing.assert_allclose(segmented_ours, full_ours, rtol=1e-4, atol=1e-5)


def test_attn_type_2_positions_count_back_from_the_newest_token():
    """Without memory the last token has position 0: a segment's prefix read alone is read at
    other positions than inside the segment, unlike relative encodings."""
    tokens = random_tokens([2, 6], seed=11)
    for attn_type, same in ((2, False), (0, True)):
        model = make_model(attn_type=attn_type, mem_len=0)
        whole = model(tokens)["log_probs"].numpy()[:, :4]
        prefix = model(tokens[:, :4])["log_probs"].numpy()
        assert np.allclose(whole, prefix, rtol=1e-5, atol=1e-5) == same, attn_type


# ------------------------------------------------------------------------------------------------
# Every variant with a memory; one without (the model has no branch on the memory's length: an
# empty memory is the same program with zero-length tensors).
XLA_CASES = [(1, 8), (2, 8), (3, 8), (2, 0)]


def xla_inputs():
    return random_tokens([2, 4], seed=7), random_tokens([2, 4], seed=8)


@pytest.fixture(scope="module")
def xla_steps():
    """{(attn_type, mem_len): (model, its step's (loss, gradients, new memory) computed by
    XLA)} of every case of XLA_CASES, their steps compiled together in one XLA program (one
    compilation instead of one per case; the models share no variable)."""
    models = [make_model(attn_type=attn_type, mem_len=mem_len)
              for attn_type, mem_len in XLA_CASES]
    tokens, labels = xla_inputs()

    @tf.function(jit_compile=True)
    def every_step(every_mems):
        return [train_step(model)(tokens, labels, mems)
                for model, mems in zip(models, every_mems)]

    results = every_step([model.init_mems(2) for model in models])
    return {case: (model, result) for case, model, result in zip(XLA_CASES, models, results)}


@pytest.mark.parametrize("attn_type,mem_len", XLA_CASES)
def test_xla_step_equals_plain_step(xla_steps, attn_type, mem_len):
    model, (loss_b, grads_b, mems_b) = xla_steps[attn_type, mem_len]
    assert model.config.attn_type == attn_type and model.config.mem_len == mem_len
    tokens, labels = xla_inputs()
    loss_a, grads_a, mems_a = train_step(model)(tokens, labels, model.init_mems(2))  # eager
    np.testing.assert_allclose(loss_a.numpy(), loss_b.numpy(), rtol=1e-5)
    assert len(grads_a) == len(grads_b) == len(model.trainable_variables)
    for var, g_a, g_b in zip(model.trainable_variables, grads_a, grads_b):
        assert g_a is not None, var.path
        np.testing.assert_allclose(tf.convert_to_tensor(g_a).numpy(),
                                   tf.convert_to_tensor(g_b).numpy(), rtol=1e-3, atol=1e-5)
    assert len(mems_a) == len(mems_b) == 2
    for m_a, m_b in zip(mems_a, mems_b):
        np.testing.assert_allclose(m_a.numpy(), m_b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attn_type", VARIANTS)
@pytest.mark.parametrize("policy,tolerance", [("mixed_bfloat16", 0.1), ("mixed_float16", 0.02)])
def test_mixed_precision_stays_close_to_float32(attn_type, policy, tolerance):
    reference = make_model(attn_type=attn_type, init_std=0.05)
    mixed = TransformerXL(reference.config, dtype=policy)
    mixed.set_weights(reference.get_weights())
    tokens, labels = random_tokens([2, 4], seed=9), random_tokens([2, 4], seed=10)
    mems = reference.init_mems(2)
    want = reference(tokens, mems=mems, labels=labels)
    got = mixed(tokens, mems=mems, labels=labels)
    assert got["nll"].dtype == tf.float32 and got["mems"][0].dtype == tf.float32
    assert all(v.dtype == "float32" for v in mixed.weights)
    np.testing.assert_allclose(got["nll"].numpy(), want["nll"].numpy(), rtol=tolerance,
                               atol=tolerance)
    out = mixed(tokens, mems=got["mems"], labels=labels, training=True)
    assert np.isfinite(out["nll"].numpy()).all()


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attn_type", [1, 3])
def test_save_load_round_trip_keeps_the_trained_tables(attn_type, tmp_path):
    model = make_model(attn_type=attn_type, tgt_len=4, mem_len=8)
    assert model.config.max_klen == 12
    clone = TransformerXL.from_config(model.get_config())
    assert clone.config == model.config
    assert TransformerXLConfig.from_json(model.config.to_json()) == model.config
    tokens, labels = random_tokens([2, 4]), random_tokens([2, 4], seed=1)
    mems = model.init_mems(2)
    txl_tf.save_model(model, str(tmp_path))
    loaded = txl_tf.load_model(str(tmp_path))
    np.testing.assert_array_equal(model(tokens, mems=mems, labels=labels)["nll"].numpy(),
                                  loaded(tokens, mems=mems, labels=labels)["nll"].numpy())
    # Evaluation settings change at load time; the tables keep their trained length.
    longer = txl_tf.load_model(str(tmp_path), mem_len=20, tgt_len=16)
    assert longer.config.max_klen == 12 and longer.init_mems(1)[0].shape == (1, 20, 16)
    out = longer(random_tokens([1, 16]), mems=longer.init_mems(1))
    assert np.isfinite(out["log_probs"].numpy()).all()


def test_attn_type_2_save_load_round_trip_with_memory(tmp_path):
    model = make_model(attn_type=2, tgt_len=4, mem_len=6, clamp_len=5)
    assert TransformerXLConfig.from_json(model.config.to_json()) == model.config
    assert model.config.max_klen is None
    txl_tf.save_model(model, str(tmp_path))
    loaded = txl_tf.load_model(str(tmp_path))
    assert loaded.config == model.config
    mems_a, mems_b = model.init_mems(2), loaded.init_mems(2)
    for seed in (1, 2):  # the second segment reads the first one's memory
        tokens, labels = random_tokens([2, 4], seed=seed), random_tokens([2, 4], seed=seed + 5)
        a = model(tokens, mems=mems_a, labels=labels)
        b = loaded(tokens, mems=mems_b, labels=labels)
        np.testing.assert_array_equal(a["nll"].numpy(), b["nll"].numpy())
        mems_a, mems_b = a["mems"], b["mems"]


def test_variant_weights():
    shaw = make_model(attn_type=1, tgt_len=4, mem_len=8)
    names = {v.path.split("/", 1)[1] for v in shaw.weights}  # without the model's name
    for i in range(2):
        for name in ("r_emb", "r_w_bias", "r_bias"):
            assert f"layer_{i}/rel_attn/{name}" in names
        assert f"layer_{i}/rel_attn/r" not in names
    assert not any(n in ("r_w_bias", "r_r_bias") for n in names)  # no model-level u/v
    assert shaw.blocks[0].attention.r_emb.shape == (12, 2, 8)
    assert shaw.blocks[0].attention.r_bias.shape == (12, 2)
    al_rfou = make_model(attn_type=3, tgt_len=4, mem_len=0)
    assert [e.embeddings.shape for e in al_rfou.absolute_embeddings] == [(4, 16)] * 2
    assert not any(v.path.endswith(("/r", "r_emb", "r_bias", "r_w_bias", "r_r_bias"))
                   for v in al_rfou.weights)


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("changes,max_klen", [
    (dict(attn_type=1), 12), (dict(attn_type=3, mem_len=0), 4),
    (dict(attn_type=1, max_klen=30), 30), (dict(attn_type=0), None),
    (dict(attn_type=2, mem_len=0), None), (dict(attn_type=2), None)])
def test_config_accepts_every_attn_type(changes, max_klen):
    config = small_config(**changes)
    assert config.max_klen == max_klen
    assert config.replace(tgt_len=100).max_klen == max_klen  # evaluation keeps the tables
    assert TransformerXLConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("changes,message", [
    (dict(attn_type=4), "attn_type=4 is not implemented"),
    (dict(attn_type=-1), "attn_type"),
    (dict(attn_type=1, untie_r=True), "untie_r"),
    (dict(attn_type=3, untie_r=True), "untie_r"),
    (dict(attn_type=1, max_klen=0), "max_klen"),
    (dict(attn_type=3, max_klen=2.5), "max_klen"),
    (dict(attn_type=0, max_klen=10), "max_klen"),
    (dict(attn_type=2, mem_len=0, max_klen=10), "max_klen"),
])
def test_invalid_attn_type_combinations_are_rejected(changes, message):
    with pytest.raises(ConfigError, match=message):
        small_config(**changes)


def test_weight_importers_refuse_other_attn_types():
    fields = small_config(attn_type=1).to_dict()
    with pytest.raises(WeightImportError, match="attn_type=1: .*only attn_type 0"):
        import_weights._build(fields, lambda config, names: {})
