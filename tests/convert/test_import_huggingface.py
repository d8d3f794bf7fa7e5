"""Parity of `--source=huggingface` imports with an independent NumPy pass of the Hugging Face
transformers v4.30 semantics (`reference_numpy` with its mask and LayerNorm epsilon).

The Hugging Face directories are written here from known arrays, with the PyTorch names and
orientation (`model.safetensors`) or the TF names and orientation (`tf_model.h5`), so the suite
needs neither torch nor transformers. `runners/tools/check_huggingface_parity.py` compares against the
real `TransfoXLLMHeadModel` in a separate environment.
"""
import importlib.util
import json
import os

import h5py
import numpy as np
import pytest

import reference_numpy as ref
from import_helpers import compare, make_segments, run_reference, run_txl
from txl_tf.commands import import_weights
from txl_tf.convert import safetensors_io
from txl_tf.convert.errors import WeightImportError
import txl_tf

TOL = 1e-5
P = "transformer/"
BASE = dict(n_layer=2, d_model=16, n_head=2, d_head=4, d_inner=24)


def hf_state(params, cfg, untie_r, tie_projs):
    """Hugging Face PyTorch state dict (names, [out, in] Linear weights, [d_model, d_i]
    projections) of the TF1-named `params`, including the duplicates `save_pretrained` writes
    for tied and shared tensors."""
    st = {}
    e, s = P + "adaptive_embed/", P + "adaptive_softmax/"
    ends = [0] + list(cfg["cutoffs"]) + [cfg["n_token"]]
    n_bins = len(ends) - 1
    if cfg["div_val"] == 1:
        st["transformer.word_emb.emb_layers.0.weight"] = params[e + "lookup_table"]
        emb_projs = [params.get(e + "proj_W")] * n_bins
        if emb_projs[0] is not None:
            st["transformer.word_emb.emb_projs.0"] = emb_projs[0].T
    else:
        emb_projs = []
        for i in range(n_bins):
            table = params[e + f"cutoff_{i}/lookup_table"]
            st[f"transformer.word_emb.emb_layers.{i}.weight"] = table
            st[f"transformer.word_emb.emb_projs.{i}"] = params[e + f"cutoff_{i}/proj_W"].T
            emb_projs.append(params[e + f"cutoff_{i}/proj_W"])
    for layer in range(cfg["n_layer"]):
        src, dst = P + f"layer_{layer}/", f"transformer.layers.{layer}."
        st[dst + "dec_attn.qkv_net.weight"] = params[src + "rel_attn/qkv/kernel"].T
        st[dst + "dec_attn.r_net.weight"] = params[src + "rel_attn/r/kernel"].T
        st[dst + "dec_attn.o_net.weight"] = params[src + "rel_attn/o/kernel"].T
        st[dst + "dec_attn.layer_norm.weight"] = params[src + "rel_attn/LayerNorm/gamma"]
        st[dst + "dec_attn.layer_norm.bias"] = params[src + "rel_attn/LayerNorm/beta"]
        st[dst + "pos_ff.CoreNet.0.weight"] = params[src + "ff/layer_1/kernel"].T
        st[dst + "pos_ff.CoreNet.0.bias"] = params[src + "ff/layer_1/bias"]
        st[dst + "pos_ff.CoreNet.3.weight"] = params[src + "ff/layer_2/kernel"].T
        st[dst + "pos_ff.CoreNet.3.bias"] = params[src + "ff/layer_2/bias"]
        st[dst + "pos_ff.layer_norm.weight"] = params[src + "ff/LayerNorm/gamma"]
        st[dst + "pos_ff.layer_norm.bias"] = params[src + "ff/LayerNorm/beta"]
        for bias in ("r_w_bias", "r_r_bias"):
            value = params[P + bias]
            st[dst + f"dec_attn.{bias}"] = value[layer] if untie_r else value
    if not untie_r:
        st["transformer.r_w_bias"] = params[P + "r_w_bias"]
        st["transformer.r_r_bias"] = params[P + "r_r_bias"]
    d = cfg["d_model"]
    st["transformer.pos_emb.inv_freq"] = (1 / 10000 ** (np.arange(0, d, 2.0) / d)).astype(
        np.float32)
    if cfg["div_val"] == 1:
        st["crit.out_layers.0.weight"] = params[e + "lookup_table"]
        st["crit.out_layers.0.bias"] = (params[s + "bias"] if not cfg["cutoffs"] else
                                        np.concatenate([params[s + f"cutoff_{i}/b"]
                                                        for i in range(n_bins)]))
    else:
        for i in range(n_bins):
            st[f"crit.out_layers.{i}.weight"] = params[e + f"cutoff_{i}/lookup_table"]
            st[f"crit.out_layers.{i}.bias"] = params[s + f"cutoff_{i}/b"]
    if cfg["cutoffs"]:
        st["crit.cluster_weight"] = params[s + "cutoff_0/cluster_W"]
        st["crit.cluster_bias"] = params[s + "cutoff_0/cluster_b"]
    for i in range(n_bins):
        own = params.get(s + f"cutoff_{i}/proj") if cfg["cutoffs"] else None
        proj = own if own is not None else emb_projs[i]
        if tie_projs[i]:
            assert own is None or np.array_equal(own, emb_projs[i])
        if proj is not None:
            st[f"crit.out_projs.{i}"] = proj.T
    return st


def tf_h5_name(name):
    """Hugging Face TF variable name and transpose flag of a PyTorch name (test-side rules)."""
    parts = name.split(".")
    out = []
    for part in parts:
        if part.isdigit():
            out[-1] += f"_._{part}"
        else:
            out.append(part)
    transpose = False
    leaf = out[-1]
    if out[-2].startswith("out_layers_._"):
        out = out[:-2] + [f"{out[-2]}_._{leaf}"]
    elif leaf == "weight" and out[-2] == "layer_norm":
        out[-1] = "gamma"
    elif leaf == "bias" and out[-2] == "layer_norm":
        out[-1] = "beta"
    elif leaf == "weight" and out[-2].startswith("emb_layers_._"):
        out[-1] = "embeddings"
    elif leaf == "weight":
        out[-1], transpose = "kernel", True
    if out[-1].startswith(("emb_projs_._", "out_projs_._")):
        transpose = True
    top = out[0]
    return f"{top}/tf_transfo_xl_lm_head_model/" + "/".join(out) + ":0", transpose


def write_hf_dir(path, params, cfg, hf_config, fmt):
    os.makedirs(path)
    state = hf_state(params, cfg, hf_config["untie_r"], hf_config["tie_projs"])
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(hf_config, f)
    if fmt == "safetensors":
        safetensors_io.write(os.path.join(path, "model.safetensors"), state)
    else:
        with h5py.File(os.path.join(path, "tf_model.h5"), "w") as f:
            for name, value in state.items():
                if name == "transformer.pos_emb.inv_freq":
                    continue  # a PyTorch buffer; the TF model has no such variable
                h5_name, transpose = tf_h5_name(name)
                f.create_dataset(h5_name, data=value.T if transpose else value)
    return state


CASES = {
    # name: (cfg, TF1 param options, HF config extras, format, import options)
    "div1_no_cutoffs_shared_uv_safetensors": (
        dict(BASE, n_token=30, div_val=1, cutoffs=[]), dict(untie_r=False),
        dict(mem_len=5, clamp_len=3, same_length=False, tie_projs=[False]),
        "safetensors", {}),
    "div2_tied_untie_r_same_length_hf_semantics": (
        dict(BASE, n_token=50, div_val=2, cutoffs=[15, 30]),
        dict(untie_r=True, proj_share_all_but_first=True),
        dict(mem_len=6, clamp_len=-1, same_length=True, tie_projs=[False, True, True]),
        "safetensors", dict(same_length_semantics="huggingface")),
    "div4_tf_h5": (
        dict(BASE, n_token=60, div_val=4, cutoffs=[20, 40]),
        dict(untie_r=True, proj_share_all_but_first=True),
        dict(mem_len=5, clamp_len=4, same_length=False, tie_projs=[False, True, True]),
        "h5", {}),
    "div2_mixed_tie_projs_reversed_clusters": (
        dict(BASE, n_token=50, div_val=2, cutoffs=[10, 30]),
        dict(untie_r=False, proj_share_all_but_first=False),
        dict(mem_len=4, clamp_len=2, same_length=False, tie_projs=[False, False, True]),
        "safetensors", dict(cluster_order="reversed")),
}


def _hf_config(cfg, untie_r, extras):
    return dict(vocab_size=cfg["n_token"], cutoffs=cfg["cutoffs"], d_model=cfg["d_model"],
                d_embed=cfg["d_model"], n_head=cfg["n_head"], d_head=cfg["d_head"],
                d_inner=cfg["d_inner"], div_val=cfg["div_val"], n_layer=cfg["n_layer"],
                untie_r=untie_r, pre_lnorm=False, layer_norm_epsilon=1e-5, dropout=0.0,
                dropatt=0.0, attn_type=0, **extras)


def _params_for(cfg, options, extras, rng):
    params = ref.random_tf1_params(cfg, rng, **options)
    # A bin whose projection HF ties while others are untied: make the TF1 view consistent.
    s, e = P + "adaptive_softmax/", P + "adaptive_embed/"
    for i, tied in enumerate(extras["tie_projs"]):
        if tied and cfg["cutoffs"]:
            params.pop(s + f"cutoff_{i}/proj", None)
        elif cfg["cutoffs"] and s + f"cutoff_{i}/proj" not in params and cfg["div_val"] > 1:
            params[s + f"cutoff_{i}/proj"] = params[e + f"cutoff_{i}/proj_W"] * 0.5
    return params


@pytest.mark.parametrize("name", sorted(CASES))
def test_huggingface_parity(tmp_path, name):
    cfg, options, extras, fmt, import_options = CASES[name]
    rng = np.random.default_rng(10 + sorted(CASES).index(name))
    params = _params_for(cfg, options, extras, rng)
    hf_config = _hf_config(cfg, options["untie_r"], extras)
    write_hf_dir(str(tmp_path / "hf"), params, cfg, hf_config, fmt)
    model, report = import_weights.import_huggingface(str(tmp_path / "hf"), dict(tgt_len=4),
                                                **import_options)
    import_weights.write_model_dir(model, str(tmp_path / "imported"), report)
    model = txl_tf.load_model(str(tmp_path / "imported"))
    assert model.config.layer_norm_epsilon == 1e-5

    mem_len = extras["mem_len"]
    hf_semantics = import_options.get("same_length_semantics") == "huggingface"
    assert model.config.mem_len == (mem_len - 1 if hf_semantics else mem_len)
    segments = make_segments(rng, cfg["n_token"], qlen=4, batch=2, count=3)
    got = run_txl(model, segments)
    want = run_reference(params, cfg, segments, mem_len, clamp_len=extras["clamp_len"],
                         same_length=extras["same_length"], mask_semantics="huggingface",
                         cluster_order=import_options.get("cluster_order", "tf"),
                         layer_norm_epsilon=1e-5)
    # With the HF same_length equivalence txl-tf keeps the newest mem_len - 1 states.
    nll_err, mem_err = compare(got, want, slice(1, None) if hf_semantics else slice(None),
                               name=name)
    assert nll_err < TOL and mem_err < TOL


def test_huggingface_same_length_differs_from_paper_semantics(tmp_path):
    """Hugging Face's same_length mask really differs from the original TF one (m vs m + 1
    keys): importing with the paper semantics does not reproduce Hugging Face."""
    cfg, options, extras, fmt, _ = CASES["div2_tied_untie_r_same_length_hf_semantics"]
    rng = np.random.default_rng(5)
    params = _params_for(cfg, options, extras, rng)
    write_hf_dir(str(tmp_path / "hf"), params, cfg, _hf_config(cfg, True, extras), fmt)
    model, _ = import_weights.import_huggingface(str(tmp_path / "hf"), dict(tgt_len=4))
    assert model.config.mem_len == extras["mem_len"]
    segments = make_segments(rng, cfg["n_token"], 4, 2, 2)
    got = run_txl(model, segments)
    hf = run_reference(params, cfg, segments, extras["mem_len"], same_length=True,
                       mask_semantics="huggingface", layer_norm_epsilon=1e-5)
    paper = run_reference(params, cfg, segments, extras["mem_len"], same_length=True,
                          mask_semantics="tf", layer_norm_epsilon=1e-5)
    assert compare(got, paper)[0] < TOL
    assert compare(got, hf)[0] > 1e-3


def test_untied_output_table_and_stray_tensors_rejected(tmp_path):
    cfg, options, extras, _, _ = CASES["div4_tf_h5"]
    params = _params_for(cfg, options, extras, np.random.default_rng(6))
    hf_config = _hf_config(cfg, True, extras)
    state = write_hf_dir(str(tmp_path / "ok"), params, cfg, hf_config, "safetensors")

    untied = dict(state)
    untied["crit.out_layers.1.weight"] = untied["crit.out_layers.1.weight"] + 1.0
    os.makedirs(tmp_path / "untied")
    json.dump(hf_config, open(tmp_path / "untied" / "config.json", "w"))
    safetensors_io.write(str(tmp_path / "untied" / "model.safetensors"), untied)
    with pytest.raises(WeightImportError, match="out_layers.1.weight"):
        import_weights.import_huggingface(str(tmp_path / "untied"))

    stray = dict(state)
    stray["classifier.weight"] = np.zeros((2, 2), np.float32)
    os.makedirs(tmp_path / "stray")
    json.dump(hf_config, open(tmp_path / "stray" / "config.json", "w"))
    safetensors_io.write(str(tmp_path / "stray" / "model.safetensors"), stray)
    with pytest.raises(WeightImportError, match="classifier.weight"):
        import_weights.import_huggingface(str(tmp_path / "stray"))


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_pytorch_bin_without_torch_is_a_clear_error(tmp_path):
    os.makedirs(tmp_path / "hf")
    json.dump(_hf_config(dict(BASE, n_token=30, div_val=1, cutoffs=[]), False, {}),
              open(tmp_path / "hf" / "config.json", "w"))
    (tmp_path / "hf" / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(WeightImportError, match="PyTorch is not installed"):
        import_weights.import_huggingface(str(tmp_path / "hf"))


def test_safetensors_round_trip(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, -2], np.int64),
              "c": np.ones((0, 4), np.float16)}
    path = str(tmp_path / "x.safetensors")
    safetensors_io.write(path, arrays, metadata={"format": "pt"})
    back = safetensors_io.read(path)
    assert sorted(back) == sorted(arrays)
    for k in arrays:
        assert back[k].dtype == arrays[k].dtype and np.array_equal(back[k], arrays[k])


@pytest.mark.skipif(not os.environ.get("TXL_HF_PYTHON"),
                    reason="set TXL_HF_PYTHON to a Python with torch and transformers==4.30.2")
def test_against_real_transformers(tmp_path):
    """Opt-in: the real `TransfoXLLMHeadModel` check (runners/tools/check_huggingface_parity.py)."""
    import subprocess
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run(
        [os.environ["TXL_HF_PYTHON"], os.path.join(repo, "runners", "tools", "check_huggingface_parity.py"),
         f"--project_python={sys.executable}", f"--work_dir={tmp_path}", "--segments=3"],
        capture_output=True, text=True, cwd=repo, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
