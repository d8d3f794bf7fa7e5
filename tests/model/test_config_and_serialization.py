"""TransformerXLConfig validation and JSON; get_config round trips of every layer."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from txl_tf import ConfigError, TransformerXLConfig
from txl_tf.layers.absolute_position_embedding import LearnedPositionEmbedding
from txl_tf.layers.learned_relative_attention import LearnedRelativeMultiHeadAttention


def test_defaults_are_the_reference_defaults():
    c = TransformerXLConfig(n_token=10)
    assert (c.n_layer, c.d_model, c.n_head, c.d_head, c.d_inner) == (6, 500, 10, 50, 1000)
    assert (c.tgt_len, c.mem_len, c.dropout, c.dropatt) == (70, 70, 0.1, 0.1)
    assert c.d_embed == 500 and c.layer_norm_epsilon == 1e-12 and c.cutoffs == ()
    assert (c.init, c.init_std, c.proj_init_std, c.init_range) == ("normal", 0.02, 0.01, 0.1)


def test_json_round_trip():
    c = TransformerXLConfig(n_token=300, cutoffs=[20, 100], div_val=4, untie_r=True,
                            same_length=True, clamp_len=50)
    assert TransformerXLConfig.from_json(c.to_json()) == c
    assert c.tie_projs == (False, False, False)
    assert c.replace(proj_share_all_but_first=True).tie_projs == (False, True, True)


@pytest.mark.parametrize("changes,message", [
    (dict(cutoffs=(20, 10)), "strictly increasing"),
    (dict(cutoffs=(10, 300)), "< n_token"),
    (dict(div_val=0), "div_val"),
    (dict(mem_len=-1), "mem_len"),
    (dict(tgt_len=0), "tgt_len"),
    (dict(clamp_len=-5), "clamp_len"),
    (dict(d_model=501), "even"),
    (dict(dropout=1.0), "dropout"),
    (dict(attn_type=4), "attn_type"),
    (dict(init="xavier"), "init"),
    (dict(div_val=4, cutoffs=(10, 20, 30, 40, 50), d_embed=64), "div_val"),
])
def test_impossible_configs_are_rejected_with_a_clear_message(changes, message):
    values = dict(n_token=300)
    values.update(changes)
    with pytest.raises(ConfigError, match=message):
        TransformerXLConfig(**values)


def test_from_json_rejects_unknown_fields_and_bad_json():
    with pytest.raises(ConfigError, match="unknown field"):
        TransformerXLConfig.from_dict({"n_token": 3, "n_layers": 4})
    with pytest.raises(ConfigError, match="not valid JSON"):
        TransformerXLConfig.from_json("{n_token: 3")
    with pytest.raises(ConfigError, match="n_token"):
        TransformerXLConfig.from_dict({"n_layer": 3})


LAYERS = [
    (txl_tf.RelativePositionalEncoding, dict(d_model=8)),
    (txl_tf.RelativeMultiHeadAttention, dict(d_model=8, n_head=2, d_head=4, dropout=0.1,
                                              dropatt=0.2, pre_lnorm=True, relative=True)),
    (txl_tf.PositionwiseFeedForward, dict(d_model=8, d_inner=16, dropout=0.1)),
    (txl_tf.TransformerXLBlock, dict(d_model=8, n_head=2, d_head=4, d_inner=16,
                                      attention_options={"relative": False})),
    (txl_tf.AdaptiveEmbedding, dict(n_token=30, d_embed=8, d_model=8, cutoffs=[10, 20],
                                     div_val=2, proj_same_dim=False)),
    (txl_tf.AdaptiveSoftmax, dict(n_token=30, d_embed=8, d_model=8, cutoffs=[10, 20],
                                   div_val=2, tie_projs=[False, True, True])),
    (LearnedRelativeMultiHeadAttention, dict(d_model=8, n_head=2, d_head=4, max_klen=12,
                                             dropout=0.1, dropatt=0.2, pre_lnorm=True)),
    (LearnedPositionEmbedding, dict(max_klen=12, d_model=8)),
    (txl_tf.TransformerXLBlock, dict(d_model=8, n_head=2, d_head=4, d_inner=16,
                                      attention="txl_tf>LearnedRelativeMultiHeadAttention",
                                      attention_options={"max_klen": 12})),
]


@pytest.mark.parametrize("cls,kwargs", LAYERS)
def test_layer_config_round_trip(cls, kwargs):
    layer = cls(**kwargs)
    config = layer.get_config()
    for key, value in kwargs.items():
        assert config[key] == value, key
    clone = cls.from_config(config)
    assert clone.get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(revived) is cls and revived.get_config() == config


def test_block_clone_computes_the_same_function():
    keras.utils.set_random_seed(0)
    block = txl_tf.TransformerXLBlock(d_model=8, n_head=2, d_head=4, d_inner=16)
    block.build()
    clone = txl_tf.TransformerXLBlock.from_config(block.get_config())
    clone.build()
    clone.set_weights(block.get_weights())
    h = tf.random.normal([2, 3, 8])
    pos = txl_tf.RelativePositionalEncoding(8)(tf.constant(3))
    u = tf.zeros([2, 4])
    args = dict(pos_emb=pos, r_w_bias=u, r_r_bias=u, allowed=txl_tf.attention_mask(3, 0))
    np.testing.assert_array_equal(block(h, **args).numpy(), clone(h, **args).numpy())
