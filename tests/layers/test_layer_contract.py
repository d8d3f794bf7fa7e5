"""Every Keras layer of txl_tf keeps the layer contract (tests/support/layer_contract.py):
config and serialization round trips, build on call, weight counts, output shapes, gradients
to every weight, float32 and mixed_bfloat16 policies."""
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from layer_contract import run_layer_test
from tiny import tiny_config
from txl_tf.layers.dropout import ReplicaDropout

B, Q, M, D, N, H = 2, 3, 4, 16, 2, 8
K = M + Q


def normal(*shape, seed=0):
    return tf.constant(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


def attention_inputs():
    """(h, the other call arguments) of a relative attention layer with memory."""
    return normal(B, Q, D), dict(mem=normal(B, M, D, seed=1), pos_emb=normal(K, D, seed=2),
                                 r_w_bias=normal(N, H, seed=3), r_r_bias=normal(N, H, seed=4),
                                 allowed=txl_tf.attention_mask(Q, M, False))


# Tokens of every bin of cutoffs (10, 25) over 40 tokens, and labels of every bin.
TOKENS = tf.constant([[0, 12, 30], [9, 24, 39]], tf.int32)
ADAPTIVE = dict(n_token=40, d_embed=16, d_model=8, cutoffs=(10, 25), div_val=2)


def test_every_exported_layer_has_a_contract_case():
    exported = {name for name in txl_tf.__all__
                if isinstance(getattr(txl_tf, name), type)
                and issubclass(getattr(txl_tf, name), keras.layers.Layer)}
    assert exported == {"AdaptiveEmbedding", "AdaptiveSoftmax", "PositionwiseFeedForward",
                        "RelativeMultiHeadAttention", "RelativePositionalEncoding",
                        "TransformerXL", "TransformerXLBlock", "TransformerXLCausalLM"}
    tested = {name[len("test_"):] for name in globals() if name.startswith("test_")}
    for name in exported:
        snake = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
        assert any(t.startswith(snake) for t in tested), f"no contract test for {name}"


def test_relative_positional_encoding():
    run_layer_test(txl_tf.RelativePositionalEncoding, dict(d_model=D), tf.constant(K),
                   dict(clamp_len=5), expected_output_shape=(K, D),
                   expected_num_trainable_weights=0, expected_output_dtype="float32")


@pytest.mark.parametrize("options,weights", [
    (dict(), 5),  # qkv, r, o, LayerNorm gamma and beta
    (dict(pre_lnorm=True, dropout=0.1, dropatt=0.1), 5),
    (dict(relative=False), 4),  # no r
])
def test_relative_multi_head_attention(options, weights):
    h, call_kwargs = attention_inputs()
    run_layer_test(txl_tf.RelativeMultiHeadAttention, dict(d_model=D, n_head=N, d_head=H,
                                                           **options),
                   h, call_kwargs, expected_output_shape=(B, Q, D),
                   expected_num_trainable_weights=weights,
                   expected_num_non_trainable_variables=2)  # the two dropout seed states


@pytest.mark.parametrize("pre_lnorm", [False, True])
def test_positionwise_feed_forward(pre_lnorm):
    run_layer_test(txl_tf.PositionwiseFeedForward,
                   dict(d_model=D, d_inner=32, dropout=0.1, pre_lnorm=pre_lnorm),
                   normal(B, Q, D), expected_output_shape=(B, Q, D),
                   expected_num_trainable_weights=6, expected_num_non_trainable_variables=2)


def test_transformer_xl_block():
    h, call_kwargs = attention_inputs()
    run_layer_test(txl_tf.TransformerXLBlock,
                   dict(d_model=D, n_head=N, d_head=H, d_inner=32, dropout=0.1, dropatt=0.1),
                   h, call_kwargs, expected_output_shape=(B, Q, D),
                   expected_num_trainable_weights=11, expected_num_non_trainable_variables=4)


@pytest.mark.parametrize("options,weights", [
    (dict(ADAPTIVE), 6),  # a table and a projection per bin
    (dict(ADAPTIVE, div_val=1, cutoffs=()), 2),  # one table, one projection (16 -> 8)
    (dict(ADAPTIVE, div_val=1, d_embed=8, cutoffs=()), 1),  # no projection
])
def test_adaptive_embedding(options, weights):
    run_layer_test(txl_tf.AdaptiveEmbedding, options, TOKENS,
                   expected_output_shape=(2, 3, options["d_model"]),
                   expected_num_trainable_weights=weights)


@pytest.mark.parametrize("labels", [None, TOKENS])
@pytest.mark.parametrize("options,weights", [
    # Stand-alone (its own embedding), projections tied to it: 3 tables and 3 projections, a
    # bias per bin, cluster_W and cluster_b.
    (dict(ADAPTIVE, tie_projs=(True, True, True)), 11),
    (dict(ADAPTIVE, div_val=1, d_embed=8, cutoffs=()), 2),  # one table and one bias
])
def test_adaptive_softmax(options, weights, labels):
    """A float32 layer (its default policy, whatever the global one; see the test below)."""
    run_layer_test(txl_tf.AdaptiveSoftmax, options, normal(2, 3, 8),
                   dict(labels=labels), expected_output_shape=(2, 3) if labels is not None
                   else (2, 3, 40), expected_num_trainable_weights=weights,
                   expected_output_dtype="float32", dtype_policies=("float32",))


def test_stand_alone_adaptive_softmax_has_no_dead_weights():
    """The default (untied) stand-alone softmax: every weight it owns is used by its call."""
    run_layer_test(txl_tf.AdaptiveSoftmax, dict(ADAPTIVE), normal(2, 3, 8),
                   expected_output_shape=(2, 3, 40),
                   # 3 bins: 3 tables + 3 own projections + 3 biases + cluster_W + cluster_b.
                   expected_num_trainable_weights=11,
                   expected_output_dtype="float32", dtype_policies=("float32",))


def test_adaptive_softmax_is_float32_under_a_mixed_global_policy():
    """As the model uses it when training in mixed_bfloat16: bfloat16 hidden states in, float32
    log-probabilities and NLL out, float32 weights."""
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        layer = txl_tf.AdaptiveSoftmax(**ADAPTIVE)
        hidden = tf.cast(normal(2, 3, 8), tf.bfloat16)
        log_probs, nll = layer(hidden), layer(hidden, labels=TOKENS)
    finally:
        keras.config.set_dtype_policy("float32")
    assert layer.dtype_policy.name == "float32"
    assert log_probs.dtype == nll.dtype == tf.float32
    assert {w.dtype for w in layer.weights} == {"float32"}
    np.testing.assert_allclose(tf.reduce_logsumexp(log_probs, -1), 0.0, atol=1e-5)


def test_adaptive_softmax_with_a_mixed_policy_argument_works():
    """`dtype="mixed_bfloat16"` is accepted by the constructor, so the call must work too."""
    layer = txl_tf.AdaptiveSoftmax(**ADAPTIVE, dtype="mixed_bfloat16")
    log_probs = layer(tf.cast(normal(2, 3, 8), tf.bfloat16))
    assert log_probs.dtype == tf.float32


def test_replica_dropout():
    run_layer_test(ReplicaDropout, dict(rate=0.1, seed=3), normal(B, Q, D),
                   expected_output_shape=(B, Q, D), expected_num_trainable_weights=0,
                   expected_num_non_trainable_variables=1, built_by_init=True)


@pytest.mark.parametrize("changes", [dict(), dict(cutoffs=(10, 30), div_val=2, untie_r=True)])
def test_transformer_xl(changes):
    config = tiny_config(**changes)
    model = txl_tf.TransformerXL(config)
    tokens = tf.constant(np.random.default_rng(0).integers(0, config.n_token, (B, 6)), tf.int32)
    mem_shape = (B, config.mem_len, config.d_model)
    run_layer_test(txl_tf.TransformerXL, dict(config=config), tokens,
                   dict(mems=model.init_mems(B)),
                   expected_output_shape={"mems": [mem_shape] * config.n_layer,
                                          "log_probs": (B, 6, config.n_token)},
                   expected_num_trainable_weights=len(model.trainable_weights),
                   expected_num_non_trainable_variables=len(model.non_trainable_variables),
                   expected_output_dtype="float32", built_by_init=True,
                   policy_in_config=False)  # see the test below
    # The counts above are the model's own; they hold 2 blocks of 11 weights, the u and v
    # biases and the embedding and softmax weights.
    assert len(model.trainable_weights) > 2 * 11 + 2


def test_transformer_xl_keeps_its_dtype_policy_through_its_config():
    model = txl_tf.TransformerXL(tiny_config(), dtype="mixed_bfloat16")
    revived = txl_tf.TransformerXL.from_config(model.get_config())
    assert revived.dtype_policy.name == "mixed_bfloat16"


def test_transformer_xl_causal_lm():
    config = tiny_config()
    backbone = txl_tf.TransformerXL(config)
    tokens = tf.constant(np.random.default_rng(0).integers(0, config.n_token, (B, 6)), tf.int32)
    run_layer_test(txl_tf.TransformerXLCausalLM, dict(backbone=backbone), tokens,
                   expected_output_shape=(B, 6, config.n_token),
                   expected_num_trainable_weights=len(backbone.trainable_weights),
                   # the backbone's dropout seeds; the memory is made by the first fit
                   expected_num_non_trainable_variables=len(backbone.non_trainable_variables),
                   expected_output_dtype="float32", built_by_init=True,
                   policy_in_config=False)


class _Scale(keras.layers.Layer):
    """x * w for the harness's own checks; `forget` leaves `units` out of the config, `unused`
    adds a weight the call never reads."""

    def __init__(self, units, forget=False, unused=False, **kwargs):
        super().__init__(**kwargs)
        self.units, self.forget, self.unused = units, forget, unused

    def build(self, input_shape=None):
        self.w = self.add_weight(name="w", shape=(self.units,), initializer="ones")
        if self.unused:
            self.spare = self.add_weight(name="spare", shape=(1,), initializer="ones")

    def call(self, x):
        return x * self.w

    def get_config(self):
        config = super().get_config()
        config.update(forget=self.forget, unused=self.unused)
        if not self.forget:
            config.update(units=self.units)
        return config


@pytest.mark.parametrize("options,problem", [
    (dict(forget=True), "lacks the argument 'units'"),
    (dict(), "is not registered"),
])
def test_the_harness_catches_a_broken_layer(options, problem):
    with pytest.raises(AssertionError, match=problem):
        run_layer_test(_Scale, dict(units=4, **options), normal(2, 4),
                       expected_output_shape=(2, 4), expected_num_trainable_weights=1)


def test_the_harness_catches_a_weight_without_gradient():
    registered = keras.saving.register_keras_serializable(package="txl_tf")(
        type("UnusedWeightScale", (_Scale,), {}))
    with pytest.raises(AssertionError, match="no gradient reaches"):
        run_layer_test(registered, dict(units=4, unused=True), normal(2, 4),
                       expected_output_shape=(2, 4), expected_num_trainable_weights=2)
