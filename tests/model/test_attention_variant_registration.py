"""A new attention mechanism is its record plus its layer: a throwaway variant, defined only in
this file (Shaw et al. without the per-distance bias b[d]), is registered, built into a model,
run with memory and checked against the Shaw model it is known to equal when b = 0; then it is
unregistered. No library file names it."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from runners.cli.dataclass_flags import attribute_docs
from txl_tf.model import flops as model_flops
from txl_tf.model.attention_variants import (SHAW, AttentionVariant, attention_variants,
                                       attn_type_help, register_attention_variant,
                                       unregister_attention_variant)
from txl_tf.layers.learned_relative_attention import (LearnedRelativeMultiHeadAttention,
                                                      learned_table_rows)
from txl_tf.layers.relative_attention import rel_shift

from tiny import tiny_config

THROWAWAY_ATTN_TYPE = 99


class NoDistanceBiasAttention(LearnedRelativeMultiHeadAttention):
    """Shaw et al. scores without the per-distance bias: (q_i + u) . k_j + q_i . E[d]."""

    def call(self, h, mem=None, pos_emb=None, r_w_bias=None, r_r_bias=None, allowed=None,
             training=False, clamp_len=-1):
        def scores(q, k):
            rows = learned_table_rows(tf.shape(k)[2], self.max_klen, clamp_len)  # [K]
            r_emb = tf.cast(tf.gather(self.r_emb, rows), q.dtype)  # [K, N, H]
            u = tf.cast(self.r_w_bias, q.dtype)[:, None, None, :]
            content = tf.einsum("nbqh,nbkh->nbqk", q + u, k)
            position = tf.einsum("nbqh,knh->nbqk", q, r_emb)
            return content + rel_shift(position, for_backprop=bool(training))

        return self.attend(h, mem, allowed, training, scores)


THROWAWAY = AttentionVariant(
    attn_type=THROWAWAY_ATTN_TYPE, name="nobias", encoding="Shaw et al. without b",
    summary="a test variant (Shaw et al. without the per-distance bias)",
    attention="txl_tf_test>NoDistanceBiasAttention", learned_relative=True,
    weights=SHAW.weights)


@pytest.fixture
def throwaway():
    """The variant and its layer registered for one test, removed after it."""
    keras.saving.register_keras_serializable(package="txl_tf_test")(NoDistanceBiasAttention)
    register_attention_variant(THROWAWAY)
    try:
        yield THROWAWAY
    finally:
        unregister_attention_variant(THROWAWAY_ATTN_TYPE)
        keras.saving.get_custom_objects().pop(THROWAWAY.attention)


def _under_model(variable):
    """The variable's path under its model, e.g. "layer_0/rel_attn/r_emb"."""
    return variable.path.split("/", 1)[1]


def _nll(model, tokens, labels, mems):
    out = model(tokens, mems=mems, labels=labels)
    return out["nll"].numpy(), [m.numpy() for m in out["mems"]]


def test_a_registered_variant_builds_and_runs_without_library_changes(throwaway):
    base = tiny_config(mem_len=5, clamp_len=-1)
    config = throwaway.configure(base)
    assert config.attention_variant is throwaway and config.max_klen == 6 + 5
    assert throwaway in attention_variants()
    assert attn_type_help().endswith("99 a test variant (Shaw et al. without the per-distance "
                                     "bias).")
    keras.utils.set_random_seed(3)
    model = txl_tf.TransformerXL(config)
    assert all(type(block.attention) is NoDistanceBiasAttention for block in model.blocks)
    assert NoDistanceBiasAttention.__module__ == __name__

    shaw = txl_tf.TransformerXL(SHAW.configure(base))
    weights = {_under_model(v): v for v in model.weights}
    assert sorted(weights) == sorted(map(_under_model, shaw.weights))  # checkpoint-compatible
    for v in shaw.weights:
        v.assign(weights[_under_model(v)])
    assert not any(np.any(v.numpy()) for v in shaw.weights if v.path.endswith("r_bias"))

    rng = np.random.default_rng(0)
    tokens = tf.constant(rng.integers(0, base.n_token, [2, 6]), tf.int32)
    labels = tf.constant(rng.integers(0, base.n_token, [2, 6]), tf.int32)
    mems = [tf.constant(rng.normal(size=[2, 5, base.d_model]), tf.float32)
            for _ in range(base.n_layer)]
    nll, new_mems = _nll(model, tokens, labels, mems)
    shaw_nll, shaw_mems = _nll(shaw, tokens, labels, mems)
    assert nll.shape == (2, 6) and np.all(np.isfinite(nll))
    np.testing.assert_allclose(nll, shaw_nll, rtol=1e-5, atol=1e-6)  # b = 0: the same function
    for got, want in zip(new_mems, shaw_mems):
        np.testing.assert_array_equal(got, want)

    # A nonzero b changes Shaw et al. and not the variant: its own layer computes its scores.
    for v in shaw.weights + model.weights:
        if v.path.endswith("r_bias"):
            v.assign(rng.normal(size=v.shape) * 3.0)
    np.testing.assert_allclose(_nll(model, tokens, labels, mems)[0], nll, rtol=1e-5, atol=1e-6)
    assert np.max(np.abs(_nll(shaw, tokens, labels, mems)[0] - nll)) > 1e-3

    # FLOPs are read from the record (the same mechanisms as Shaw et al.).
    assert model_flops.forward_flops(config, 2, 6, 5) == \
        model_flops.forward_flops(SHAW.configure(base), 2, 6, 5)


def test_unregistering_removes_the_variant(throwaway):
    with pytest.raises(ValueError, match="clashes with 'nobias'"):
        register_attention_variant(THROWAWAY)
    with pytest.raises(ValueError, match="not a registered added variant"):
        unregister_attention_variant(SHAW.attn_type)
    unregister_attention_variant(THROWAWAY_ATTN_TYPE)
    try:
        with pytest.raises(txl_tf.ConfigError, match="attn_type=99 is not implemented"):
            tiny_config(attn_type=THROWAWAY_ATTN_TYPE)
        assert THROWAWAY not in attention_variants()
    finally:
        register_attention_variant(THROWAWAY)  # for the fixture's teardown


def test_the_help_is_generated_from_the_records():
    help_text = attribute_docs(txl_tf.TransformerXLConfig)["attn_type"]
    for variant in attention_variants():
        assert f"{variant.attn_type} {variant.summary}" in help_text
