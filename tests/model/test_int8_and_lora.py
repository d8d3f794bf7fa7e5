"""`quantize("int8")` over the whole model and `enable_lora(rank)` reaching the attention:
every projection of every attention variant (and the feed-forward, embedding and softmax) in
int8 with outputs close to float; a quantized causal LM through a preset; LoRA training only
the adapters and saving merged weights; files of the float model written before (a committed
fixture) still loading."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_records
import txl_tf
from tiny import tiny_model
from txl_tf.causal_lm import presets
from txl_tf.layers.projection_weights import ProjectionWeights
from txl_tf.model.attention_variants import ATTENTION_VARIANTS
from txl_tf.model.lora import DEFAULT_TARGETS, merged_copy, trainable_share
from txl_tf.model.quantization import quantized_share

IDS = (np.arange(12, dtype=np.int32).reshape(2, 6) * 7) % 50
FIXTURE = os.path.join(os.path.dirname(__file__), "testdata", "before_int8")
# Weights that stay float: normalisation, biases, position tables and scales.
FLOAT_KINDS = ("gamma", "beta", "bias", "_b", "r_w_bias", "r_r_bias", "r_emb", "r_bias",
               "cluster_W", "embeddings", "_scale")
# Keras collects garbage for every weight quantize replaces: each collection scans only the
# test's own objects (conftest.py).
pytestmark = pytest.mark.usefixtures("gc_frozen")
SHAPES = [dict(attn_type=v.attn_type) for v in ATTENTION_VARIANTS] + [
    dict(cutoffs=(10, 30), div_val=2), dict(cutoffs=(10, 30), d_embed=8),
    dict(cutoffs=(10, 30), div_val=2, proj_share_all_but_first=True)]


def nll(model, ids=IDS):
    return model(tf.constant(ids), mems=model.init_mems(len(ids)),
                 labels=tf.roll(ids, -1, 1))["nll"].numpy()


@pytest.mark.parametrize("changes", SHAPES, ids=lambda c: "-".join(f"{k}{v}" for k, v in
                                                                 c.items()))
def test_int8_covers_every_projection_and_stays_close(changes):
    """int8 leaves no projection float and moves the loss by < 1%; an attention variant's int8
    model then takes LoRA adapters on qkv, o and layer_1's projections (b at zero: the same
    loss; the adapters trainable, float)."""
    model = tiny_model(**changes)
    before, float_nll = quantized_share(model), nll(model)
    model.quantize("int8")
    after = quantized_share(model)
    left_float = [v.path for v in model.weights if v.dtype != "int8"
                  and not v.path.split("/")[-1].endswith(FLOAT_KINDS)]
    assert left_float == []
    assert after["parameters"] == before["parameters"]
    assert after["bytes"] < before["bytes"] / 2
    # The error of one rounding per weight: at most half a step of the largest scale, times the
    # fan-in, bounds nothing useful; the loss moves by well under 1% of its value.
    int8_nll = nll(model)
    assert np.abs(int8_nll - float_nll).max() < 0.01 * float_nll.mean()
    if "attn_type" in changes:  # LoRA on the int8 weights of each attention variant
        adapted = model.enable_lora(2, target_names=("qkv", "o", "layer_1"))
        assert len(adapted) == 3 * model.config.n_layer
        np.testing.assert_allclose(nll(model), int8_nll, rtol=1e-6)  # b starts at zero
        assert all(v.dtype != "int8" for v in model.trainable_weights)


def test_quantizing_twice_or_another_mode_is_refused_or_a_no_op():
    model = tiny_model()
    with pytest.raises(ValueError, match="int8"):
        model.quantize("int4")
    assert all(v.dtype != "int8" for v in model.weights)
    model.quantize("int8")
    count = len(model.weights)
    txl_tf.TransformerXL.quantize(model, "int8")
    assert len(model.weights) == count


def test_a_quantized_causal_lm_round_trips_through_a_preset(tmp_path):
    lm = txl_tf.TransformerXLCausalLM(tiny_model())
    lm.quantize("int8")
    expected = nll(lm.backbone)
    path = presets.save_to_preset(lm, tmp_path / "int8")
    loaded = txl_tf.TransformerXLCausalLM.from_preset(path)
    assert quantized_share(loaded.backbone) == quantized_share(lm.backbone)
    np.testing.assert_array_equal(nll(loaded.backbone), expected)


def tokens_of_period(period=7, n=2000):
    return (np.arange(n) % period + 3).astype(np.int32)


def test_a_trained_causal_lm_keeps_its_held_out_loss_in_int8():
    """One layer: what int8 reaches in every layer and variant, the tests above."""
    lm = txl_tf.TransformerXLCausalLM(tiny_model(n_layer=1))
    lm.compile(optimizer=keras.optimizers.Adam(1e-2))
    tokens = tokens_of_period()
    train = tf_records.dataset_from_tokens(tokens[:1600], per_replica_batch=2, tgt_len=6)
    held_out = tf_records.dataset_from_tokens(tokens[1600:], per_replica_batch=2, tgt_len=6)
    untrained = lm.evaluate(held_out, verbose=0, return_dict=True)["loss"]
    lm.fit(train.take(60), epochs=1, verbose=0)
    float_loss = lm.evaluate(held_out, verbose=0, return_dict=True)["loss"]
    assert float_loss < 0.5 * untrained  # it learnt the period
    lm.quantize("int8")
    int8_loss = lm.evaluate(held_out, verbose=0, return_dict=True)["loss"]
    assert quantized_share(lm.backbone)["share"] > 0.9
    assert abs(int8_loss - float_loss) < 0.02 * float_loss + 0.01


def test_lora_reaches_the_attention_and_fit_trains_only_the_adapters(tmp_path):
    lm = txl_tf.TransformerXLCausalLM(tiny_model())
    adapted = lm.enable_lora(2)
    n_layer = lm.backbone.config.n_layer
    assert adapted == sorted(f"layer_{i}/rel_attn/{name}" for i in range(n_layer)
                             for name in DEFAULT_TARGETS)
    frozen = {v.path: v.numpy().copy() for v in lm.backbone.weights if not v.trainable}
    assert 0 < trainable_share(lm.backbone) < 0.2
    lm.compile(optimizer=keras.optimizers.Adam(1e-2))
    data = tf_records.dataset_from_tokens(tokens_of_period(), per_replica_batch=2, tgt_len=6)
    first = lm.evaluate(data, verbose=0, return_dict=True)["loss"]
    lm.fit(data.take(30), epochs=1, verbose=0)
    assert lm.evaluate(data, verbose=0, return_dict=True)["loss"] < first
    for v in lm.backbone.weights:
        if v.path in frozen:
            np.testing.assert_array_equal(v.numpy(), frozen[v.path], err_msg=v.path)
    # Saved merged: a preset and an export's copy of the adapted model are plain models.
    expected = nll(lm.backbone)
    loaded = txl_tf.TransformerXLCausalLM.from_preset(presets.save_to_preset(lm, tmp_path / "p"))
    plain = merged_copy(lm.backbone)
    for model in (loaded.backbone, plain):
        assert not any("lora" in v.path for v in model.weights)
        np.testing.assert_allclose(nll(model), expected, rtol=1e-5, atol=1e-5)


def test_unknown_lora_targets_name_the_ones_there_are():
    model = tiny_model()
    with pytest.raises(ValueError, match="no projection named query.*qkv"):
        model.enable_lora(4, target_names=("query", "value"))
    assert all(v.trainable for v in model.weights if "seed" not in v.path)
    with pytest.raises(ValueError, match="positive integer"):
        model.enable_lora(0)


def test_every_projection_layer_is_reached():
    model = tiny_model(cutoffs=(10, 30), div_val=2)
    layers = [layer for layer in model._flatten_layers() if isinstance(layer, ProjectionWeights)]
    model.quantize("int8")
    for layer in layers:
        assert layer.quantized_projections == sorted(
            name for name in layer.projection_axes() if getattr(layer, name, None) is not None)


@pytest.mark.parametrize("kind", ["checkpoint", "preset_weights"])
def test_files_written_before_this_change_still_load(kind):
    """The fixture was written by the code before int8/LoRA (see testdata/README)."""
    config = txl_tf.load_config(FIXTURE)
    expected = np.load(os.path.join(FIXTURE, "nll.npy"))
    if kind == "checkpoint":
        model = txl_tf.load_model(FIXTURE)
    else:
        model = txl_tf.TransformerXL(config)
        model.load_weights(os.path.join(FIXTURE, "model.weights.h5"))
    ids = np.load(os.path.join(FIXTURE, "ids.npy"))
    np.testing.assert_allclose(nll(model, ids), expected, rtol=1e-6)
    model.quantize("int8")
    assert np.abs(nll(model, ids) - expected).max() < 0.01 * expected.mean()
