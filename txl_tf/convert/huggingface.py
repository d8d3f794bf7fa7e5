"""Hugging Face `TransfoXLLMHeadModel` directories (transformers v4.30 layout) -> txl-tf.

A directory holds `config.json` and one weight file, read in this order of preference:
`model.safetensors` (read here without any dependency), `tf_model.h5` (h5py), or
`pytorch_model.bin` (a pickle: only read through `torch.load(weights_only=True)` and only when
PyTorch is installed).

Semantics of transformers v4.30 that matter for the conversion (see the README import section):
  * PyTorch `nn.Linear` weights are [out, in]: transposed to the txl-tf [in, out] kernels;
    `emb_projs`/`out_projs` are [d_model, d_i]: transposed to txl-tf `proj_W`/`proj` [d_i, d_model].
  * cluster logits are in the TF order (cluster row i-1 belongs to tail bin i:
    `cutoffs[0] + i - 1`),
    as in txl-tf. The *original* kimiyoung PyTorch code used the reverse order; a state dict from
    that code converted to these names needs `cluster_order="reversed"`, which flips the rows.
  * output tables are tied to the input tables (`tie_word_embeddings`); output projections are
    tied per bin by `tie_projs`. txl-tf ties all tail projections or none; a mixed pattern is
    imported as untied copies with the same values.
  * `layer_norm_epsilon` (1e-5 by default) is carried into the configuration.
  * memory: L tensors, each the input of a layer, zero-initialised and attended to, updated with
    the last mem_len states: the same as txl-tf. Without `same_length` the attention mask is the
    same as txl-tf's. With `same_length` Hugging Face lets a query see mem_len keys where the
    original TF code (and txl-tf) lets it see mem_len + 1: Hugging Face with mem_len = M + 1 equals
    txl-tf with mem_len = M (`same_length_semantics="huggingface"` imports that way).
"""
import os

import numpy as np

from txl_tf.convert import hdf5_weights, safetensors_io
from txl_tf.convert.errors import WeightImportError, read_json_object
from txl_tf.convert.source_weights import SourceWeights

WEIGHT_FILES = ("model.safetensors", "tf_model.h5", "pytorch_model.bin")
CLUSTER_ORDERS = ("tf", "reversed")
SAME_LENGTH_SEMANTICS = ("paper", "huggingface")


REQUIRED_INTEGERS = ("vocab_size", "n_layer", "d_model", "n_head", "d_head", "d_inner")


def read_config(input_dir):
    """The Hugging Face config.json of `input_dir` as a dict, checked to describe a TransfoXL."""
    if not os.path.isdir(input_dir):
        raise WeightImportError(f"--input_dir={input_dir} is not a directory; give a Hugging "
                                "Face TransfoXL directory (config.json plus a weight file).")
    path = os.path.join(input_dir, "config.json")
    hf = read_json_object(path, path, "the config.json of a Hugging Face TransfoXL model "
                          "(--input_dir: config.json plus a weight file)")
    bad = [k for k in REQUIRED_INTEGERS
           if not isinstance(hf.get(k), int) or isinstance(hf.get(k), bool) or hf[k] < 1]
    if bad:
        raise WeightImportError(f"{path} is not a TransfoXL configuration: {', '.join(bad)} "
                                f"missing or not a positive integer (model_type "
                                f"{hf.get('model_type')!r}).")
    return hf


def _read_pytorch_bin(path):
    try:
        import torch
    except ImportError:
        raise WeightImportError(
            f"{path} is a PyTorch pickle and PyTorch is not installed. Either `pip install torch` "
            "(CPU is enough) and run again, or convert the directory once to model.safetensors "
            "where torch is installed (`TransfoXLLMHeadModel.from_pretrained(dir)"
            ".save_pretrained(dir, safe_serialization=True)`).") from None
    state = torch.load(path, map_location="cpu", weights_only=True)  # tensors only, no code
    return {name: tensor.detach().float().numpy() if tensor.is_floating_point()
            else tensor.detach().numpy() for name, tensor in state.items()}


def read_weights(input_dir):
    """(`SourceWeights` under Hugging Face PyTorch names and orientation, file name)."""
    for name in WEIGHT_FILES:
        path = os.path.join(input_dir, name)
        if not os.path.isfile(path):
            continue
        if name == "model.safetensors":
            arrays = safetensors_io.read(path)
        elif name == "tf_model.h5":
            arrays = hdf5_weights.read_as_pytorch_names(path)
        else:
            arrays = _read_pytorch_bin(path)
        if not arrays:
            raise WeightImportError(f"{path} holds no tensors; it is not a TransfoXL weight file.")
        return SourceWeights(arrays, description=f"Hugging Face {path}"), name
    raise WeightImportError(f"{input_dir} has none of {list(WEIGHT_FILES)}.")


def effective_tie_projs(hf):
    """Per bin, whether Hugging Face's `tie_weights` makes the output projection the embedding
    projection (it ties only where the embedding has one)."""
    cutoffs = list(hf.get("cutoffs", []))
    tie = hf.get("tie_projs")
    if tie is None:
        tie = [False] + [bool(hf.get("proj_share_all_but_first", True))] * len(cutoffs)
    tie = [bool(t) for t in tie][:len(cutoffs) + 1]
    tie += [False] * (len(cutoffs) + 1 - len(tie))
    has_proj = hf.get("div_val", 1) != 1 or hf["d_model"] != hf.get("d_embed", hf["d_model"])
    return [t and has_proj for t in tie]


def infer_config(hf, run_settings=None, same_length_semantics="paper"):
    """`TransformerXLConfig` fields of a Hugging Face config dict plus `run_settings`."""
    if same_length_semantics not in SAME_LENGTH_SEMANTICS:
        raise WeightImportError(f"same_length_semantics must be one of {SAME_LENGTH_SEMANTICS}.")
    if hf.get("attn_type", 0) != 0:
        raise WeightImportError(f"attn_type={hf['attn_type']}: Hugging Face implements only "
                                "attn_type 0 and so does this importer.")
    if hf.get("sample_softmax", -1) > 0:
        raise WeightImportError("sample_softmax > 0 is not supported (Hugging Face does not "
                                "implement it either).")
    if not hf.get("tie_word_embeddings", True):
        raise WeightImportError("tie_word_embeddings=False: txl-tf always ties the output tables "
                                "to the input tables, as the original Transformer-XL.")
    cutoffs = [int(c) for c in hf.get("cutoffs", [])]
    tie = effective_tie_projs(hf)
    div_val, d_model = int(hf.get("div_val", 1)), int(hf["d_model"])
    d_embed = int(hf.get("d_embed") or d_model)
    needs = [div_val != 1 or d_embed != d_model for _ in cutoffs]  # tail bins with a projection
    share = bool(cutoffs) and all(needs) and all(tie[1:])
    clamp_len = int(hf.get("clamp_len", -1) or -1)
    fields = dict(
        n_token=int(hf["vocab_size"]), n_layer=int(hf["n_layer"]), d_model=d_model,
        n_head=int(hf["n_head"]), d_head=int(hf["d_head"]), d_inner=int(hf["d_inner"]),
        d_embed=d_embed, div_val=div_val, cutoffs=cutoffs, untie_r=bool(hf.get("untie_r", True)),
        proj_same_dim=True, proj_share_all_but_first=share,
        pre_lnorm=bool(hf.get("pre_lnorm", False)),
        layer_norm_epsilon=float(hf.get("layer_norm_epsilon", 1e-5)),
        mem_len=int(hf.get("mem_len") or 0), clamp_len=clamp_len if clamp_len > 0 else -1,
        same_length=bool(hf.get("same_length", False)),
        dropout=float(hf.get("dropout", 0.1)), dropatt=float(hf.get("dropatt", 0.0)),
        attn_type=0)
    if hf.get("tgt_len"):
        fields["tgt_len"] = int(hf["tgt_len"])
    fields.update(run_settings or {})
    if same_length_semantics == "huggingface" and fields["same_length"]:
        if fields["mem_len"] < 1:
            raise WeightImportError("same_length_semantics='huggingface' needs mem_len >= 1.")
        fields["mem_len"] -= 1  # HF with M keys per query == txl-tf (TF) with mem_len M - 1
    return fields


def _equal(a, b):
    return a is None and b is None or (a is not None and b is not None and
                                       np.shape(a) == np.shape(b) and np.array_equal(a, b))


def map_weights(source, hf, config, expected_names, cluster_order="tf"):
    """{txl-tf variable name: array}; every Hugging Face tensor is used, checked or ignored.

    Args:
      source: the `SourceWeights` of `read_weights`.
      hf: the config.json dict.
      config: the `TransformerXLConfig` of `infer_config`.
      expected_names: the variable names of the txl-tf model.
      cluster_order: "tf" or "reversed" (see the module docstring).

    Returns:
      The arrays in txl-tf orientation.
    """
    if cluster_order not in CLUSTER_ORDERS:
        raise WeightImportError(f"cluster_order must be one of {CLUSTER_ORDERS}.")
    out, emb_tables, emb_projs = _embedding(source, config)
    out.update(_layers(source.take, config))
    out.update(_attention_biases(source, config))
    _check_sinusoid(source, config.d_model)
    _check_output_tables(source, config, out, emb_tables)
    biases = _softmax_biases(source, config)
    out_projs = _output_projections(source, hf, config, emb_projs)
    out.update(_softmax(source, config, expected_names, biases, emb_projs, out_projs,
                        cluster_order))
    return out


def _embedding(source, c):
    """(variables, tables per bin, Hugging Face projection [D, d_i] per bin): tables as they
    are, projections transposed."""
    take, emb, n_bins = source.take, "transformer.word_emb.", len(c.cutoffs) + 1
    if c.div_val == 1:
        table = take(emb + "emb_layers.0.weight")
        out = {"adaptive_embed/lookup_table": table}
        tables = [table[lo:hi] for lo, hi in zip(c.cutoff_ends[:-1], c.cutoff_ends[1:])]
        proj = take(emb + "emb_projs.0") if emb + "emb_projs.0" in source else None
        if proj is not None:
            out["adaptive_embed/proj_W"] = proj.T
        return out, tables, [proj] * n_bins
    out, tables, projs = {}, [], []
    for i in range(n_bins):
        table, proj = take(emb + f"emb_layers.{i}.weight"), take(emb + f"emb_projs.{i}")
        out[f"adaptive_embed/cutoff_{i}_lookup_table"] = table
        out[f"adaptive_embed/cutoff_{i}_proj_W"] = proj.T
        tables.append(table)
        projs.append(proj)
    return out, tables, projs


def _layers(take, c):
    """The variables of every layer: [out, in] PyTorch weights transposed and split by head."""
    d, n, h = c.d_model, c.n_head, c.d_head
    out = {}
    for layer in range(c.n_layer):
        src, dst = f"transformer.layers.{layer}.", f"layer_{layer}/"
        out[dst + "rel_attn/qkv"] = take(src + "dec_attn.qkv_net.weight").T.reshape(d, 3, n, h)
        out[dst + "rel_attn/r"] = take(src + "dec_attn.r_net.weight").T.reshape(d, n, h)
        out[dst + "rel_attn/o"] = take(src + "dec_attn.o_net.weight").T.reshape(n, h, d)
        for block, norm in (("rel_attn", "dec_attn.layer_norm"), ("ff", "pos_ff.layer_norm")):
            out[dst + f"{block}/layer_norm/gamma"] = take(src + f"{norm}.weight")
            out[dst + f"{block}/layer_norm/beta"] = take(src + f"{norm}.bias")
        for dense, core in (("layer_1", "CoreNet.0"), ("layer_2", "CoreNet.3")):
            out[dst + f"ff/{dense}/kernel"] = take(src + f"pos_ff.{core}.weight").T
            out[dst + f"ff/{dense}/bias"] = take(src + f"pos_ff.{core}.bias")
    return out


def _attention_biases(source, c):
    """u and v: per layer (untie_r) or shared; shared ones may also appear under every layer."""
    out = {}
    for bias in ("r_w_bias", "r_r_bias"):
        per_layer = [f"transformer.layers.{i}.dec_attn.{bias}" for i in range(c.n_layer)]
        if c.untie_r:
            out[bias] = np.stack([source.take(name) for name in per_layer])
            continue
        shared = source.take(f"transformer.{bias}")
        for name in per_layer:
            if name in source and not _equal(source.take(name), shared):
                raise WeightImportError(f"{name} differs from transformer.{bias} although "
                                        "untie_r is False in config.json.")
        out[bias] = shared
    return out


def _check_sinusoid(source, d):
    """A stored `inv_freq` must be the sinusoid txl-tf computes."""
    if "transformer.pos_emb.inv_freq" not in source:
        return
    inv_freq = source.take("transformer.pos_emb.inv_freq")
    want = 1.0 / 10000 ** (np.arange(0, d, 2.0) / d)
    if inv_freq.shape != want.shape or not np.allclose(inv_freq, want, rtol=1e-5):
        raise WeightImportError("transformer.pos_emb.inv_freq is not the standard sinusoid "
                                "1/10000^(2j/d_model); txl-tf cannot represent it.")


def _check_output_tables(source, c, out, emb_tables):
    """Output tables must be the (tied) input tables."""
    for i in range(len(c.cutoffs) + 1 if c.div_val != 1 else 1):
        name = f"crit.out_layers.{i}.weight"
        if name in source:
            tied = out["adaptive_embed/lookup_table"] if c.div_val == 1 else emb_tables[i]
            if not _equal(source.take(name), tied):
                raise WeightImportError(f"{name} differs from the input embedding table; txl-tf "
                                        "ties output and input tables.")


def _softmax_biases(source, c):
    """The output bias of every bin."""
    if c.div_val != 1:
        return [source.take(f"crit.out_layers.{i}.bias") for i in range(len(c.cutoffs) + 1)]
    source.ignore("crit.out_layers.*.weight", "unused extra copies (HF TF, div_val 1)")
    source.ignore("crit.out_layers.[1-9]*.bias", "unused extra copies (HF TF, div_val 1)")
    return np.split(source.take("crit.out_layers.0.bias"), list(c.cutoffs))


def _output_projections(source, hf, c, emb_projs):
    """The effective Hugging Face output projection per bin, [D, d_i] or None."""
    tie = effective_tie_projs(hf)
    out_projs = []
    for i in range(len(c.cutoffs) + 1):
        name = f"crit.out_projs.{i}"
        stored = source.take(name) if name in source else None
        if tie[i]:
            effective = emb_projs[i]
            if stored is not None and not _equal(stored, effective):
                raise WeightImportError(f"{name} is tied by tie_projs but differs from the "
                                        "embedding projection.")
        else:
            effective = stored
            if effective is None and (c.div_val != 1 or c.d_embed != c.d_model):
                raise WeightImportError(f"{name} is missing (untied output projection).")
        out_projs.append(effective)
    return out_projs


def _softmax(source, c, expected_names, biases, emb_projs, out_projs, cluster_order):
    """The adaptive softmax variables: biases, cluster weights and the projections txl-tf keeps."""
    if not c.cutoffs:
        if not _equal(out_projs[0], emb_projs[0] if emb_projs else None):
            raise WeightImportError("without cutoffs txl-tf (as the original TF code) uses the "
                                    "embedding projection for the softmax; crit.out_projs.0 "
                                    "differs from it.")
        return {"adaptive_softmax/bias": biases[0]}
    cluster_w, cluster_b = source.take("crit.cluster_weight"), source.take("crit.cluster_bias")
    if cluster_order == "reversed":
        cluster_w, cluster_b = cluster_w[::-1], cluster_b[::-1]
    out = {"adaptive_softmax/cluster_W": cluster_w, "adaptive_softmax/cluster_b": cluster_b}
    for i in range(len(c.cutoffs) + 1):
        out[f"adaptive_softmax/cutoff_{i}_b"] = biases[i]
        name = f"adaptive_softmax/cutoff_{i}_proj"
        if name in expected_names:
            if out_projs[i] is None:
                raise WeightImportError(f"bin {i} needs an output projection; none found.")
            out[name] = out_projs[i].T
        elif not _equal(out_projs[i], emb_projs[i]):
            raise WeightImportError(
                f"bin {i}: txl-tf uses the embedding projection here but crit.out_projs.{i} "
                "differs from it.")
    return out
