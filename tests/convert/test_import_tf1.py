"""Parity of `--source=tf1` imports with an independent NumPy pass of the original TF semantics.

Each case writes a random TF1 checkpoint under the reference's variable names, imports it into a
model directory, loads it with `txl_tf.load_model`, and compares per-token NLL and every layer's
new memory over three segments (from zero memories, as the reference) with `reference_numpy`.
"""
import json
import os

import numpy as np
import pytest

import reference_numpy as ref
from import_helpers import compare, make_segments, run_reference, run_txl, write_tf1_checkpoint
from txl_tf.commands import import_weights
from txl_tf.convert import tf1_checkpoint
from txl_tf.convert.errors import WeightImportError
import txl_tf

TOL = 1e-5

BASE = dict(n_layer=2, d_model=16, n_head=2, d_head=4, d_inner=24)
CASES = {
    # name: (cfg, params options, run settings)
    "enwik8_no_cutoffs_shared_uv": (
        dict(BASE, n_token=30, div_val=1, cutoffs=[]), dict(untie_r=False),
        dict(mem_len=6, clamp_len=3, same_length=True)),
    "div1_cutoffs_untied_uv_projected": (
        dict(BASE, n_token=40, div_val=1, cutoffs=[10, 25]),
        dict(untie_r=True, d_embed=12, proj_share_all_but_first=False),
        dict(mem_len=5, clamp_len=-1, same_length=False)),
    "div4_share_all_but_first_wt103": (
        dict(BASE, n_token=60, div_val=4, cutoffs=[20, 40]),
        dict(untie_r=True, proj_same_dim=True, proj_share_all_but_first=True),
        dict(mem_len=6, clamp_len=4, same_length=True)),
    "div2_proj_same_dim_false_lm1b": (
        dict(BASE, n_token=50, div_val=2, cutoffs=[15, 30, 40]),
        dict(untie_r=True, proj_same_dim=False, proj_share_all_but_first=False),
        dict(mem_len=4, clamp_len=-1, same_length=True)),
    "div1_cutoffs_shared_projection_tied": (
        dict(BASE, n_token=40, div_val=1, cutoffs=[12]),
        dict(untie_r=False, d_embed=8, proj_share_all_but_first=True),
        dict(mem_len=5, clamp_len=2, same_length=False)),
}


def _import(tmp_path, params, run, global_step=None, **kwargs):
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-0"), params, global_step)
    model, report = import_weights.import_tf1(prefix, dict(run, tgt_len=4), **kwargs)
    model_dir = str(tmp_path / "imported")
    import_weights.write_model_dir(model, model_dir, report)
    return txl_tf.load_model(model_dir), report


@pytest.mark.parametrize("name", sorted(CASES))
def test_tf1_parity(tmp_path, name):
    cfg, options, run = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    params = ref.random_tf1_params(cfg, rng, **options)
    model, _ = _import(tmp_path, params, run)
    c = model.config
    assert (c.div_val, list(c.cutoffs), c.untie_r) == (
        cfg["div_val"], cfg["cutoffs"], options.get("untie_r", False))
    assert c.proj_same_dim == options.get("proj_same_dim", True) or cfg["div_val"] == 1
    if cfg["cutoffs"] and (cfg["div_val"] > 1 or options.get("d_embed")):
        assert c.proj_share_all_but_first == options.get("proj_share_all_but_first", False)
    assert c.layer_norm_epsilon == 1e-12

    segments = make_segments(rng, cfg["n_token"], qlen=4, batch=2, count=3)
    got = run_txl(model, segments)
    want = run_reference(params, cfg, segments, run["mem_len"], clamp_len=run["clamp_len"],
                         same_length=run["same_length"])
    nll_err, mem_err = compare(got, want, name=name)
    assert nll_err < TOL and mem_err < TOL


def test_same_length_and_clamp_len_change_the_reference():
    """The options the parity cases cover are not no-ops for this size (else they prove nothing)."""
    cfg, options, run = CASES["enwik8_no_cutoffs_shared_uv"]
    params = ref.random_tf1_params(cfg, np.random.default_rng(7), **options)
    segments = make_segments(np.random.default_rng(8), cfg["n_token"], 4, 2, 2)
    base = run_reference(params, cfg, segments, 6, clamp_len=3, same_length=True)
    for change in (dict(clamp_len=3, same_length=False), dict(clamp_len=-1, same_length=True)):
        other = run_reference(params, cfg, segments, 6, **change)
        assert ref.relative_error(other[1][0], base[1][0]) > 1e-3


def test_cluster_order_matters():
    cfg, options, _ = CASES["div4_share_all_but_first_wt103"]
    params = ref.random_tf1_params(cfg, np.random.default_rng(3), **options)
    hidden = np.random.default_rng(4).standard_normal((3, 16))
    assert ref.relative_error(ref.log_probs(params, cfg, hidden, "reversed"),
                              ref.log_probs(params, cfg, hidden, "tf")) > 1e-3


def test_optimizer_slots_ignored_and_unknown_variables_rejected(tmp_path):
    cfg, options, run = CASES["enwik8_no_cutoffs_shared_uv"]
    params = ref.random_tf1_params(cfg, np.random.default_rng(0), **options)
    with_slots = dict(params)
    with_slots["beta1_power"] = np.array(0.9, np.float32)
    name = "transformer/layer_0/ff/layer_1/kernel"
    with_slots[name + "/Adam"] = np.zeros_like(params[name])
    with_slots[name + "/Adam_1"] = np.zeros_like(params[name])
    _, report = _import(tmp_path / "a", with_slots, run, global_step=7)
    assert set(report["ignored"]) == {"global_step", "beta1_power", name + "/Adam",
                                      name + "/Adam_1"}

    extra = dict(params)
    extra["transformer/layer_0/rel_attn/extra/kernel"] = np.zeros((2, 2), np.float32)
    with pytest.raises(WeightImportError, match="rel_attn/extra/kernel"):
        _import(tmp_path / "b", extra, run)

    missing = dict(params)
    del missing["transformer/layer_1/ff/layer_2/bias"]
    with pytest.raises(WeightImportError, match="layer_2/bias"):
        _import(tmp_path / "c", missing, run)


def test_corpus_cutoffs_checked(tmp_path):
    cfg, options, run = CASES["div4_share_all_but_first_wt103"]
    params = ref.random_tf1_params(cfg, np.random.default_rng(1), **options)
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-0"), params)
    source = tf1_checkpoint.read_checkpoint(prefix)
    fields = tf1_checkpoint.infer_config(source, corpus_cutoffs=[0, 20, 40, 60])
    assert fields["cutoffs"] == [20, 40] and fields["div_val"] == 4
    with pytest.raises(WeightImportError, match="corpus-info"):
        tf1_checkpoint.infer_config(source, corpus_cutoffs=[0, 20, 45, 60])


def test_model_dir_refuses_overwrite(tmp_path):
    cfg, options, run = CASES["enwik8_no_cutoffs_shared_uv"]
    params = ref.random_tf1_params(cfg, np.random.default_rng(2), **options)
    _import(tmp_path, params, run)
    assert json.load(open(os.path.join(tmp_path, "imported", "import.json")))["source"] == "tf1"
    with pytest.raises(WeightImportError, match="already holds a checkpoint"):
        _import(tmp_path, params, run)
