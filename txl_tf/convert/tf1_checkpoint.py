"""The authors' TensorFlow 1 checkpoints (kimiyoung/transformer-xl `tf/`) -> txl-tf.

Variable names (reference brief section 7), all under `transformer/`:
  r_w_bias, r_r_bias                        [N, H] shared, or [L, N, H] with untie_r
  layer_{l}/rel_attn/qkv/kernel             [D, 3*N*H]  (q, k, v blocks, each head-major)
  layer_{l}/rel_attn/r/kernel               [D, N*H]
  layer_{l}/rel_attn/o/kernel               [N*H, D]
  layer_{l}/rel_attn/LayerNorm/{gamma,beta} [D]
  layer_{l}/ff/layer_{1,2}/{kernel,bias}    [D, Di] + [Di], [Di, D] + [D]
  layer_{l}/ff/LayerNorm/{gamma,beta}       [D]
  adaptive_embed/lookup_table (+ proj_W)    div_val == 1
  adaptive_embed/cutoff_{i}/{lookup_table,proj_W}        div_val > 1
  adaptive_softmax/bias                     no cutoffs
  adaptive_softmax/cutoff_0/{cluster_W,cluster_b}, cutoff_{i}/{b,proj}   with cutoffs
Ignored: `global_step`, Adam slots (`*/Adam`, `*/Adam_1`, `beta1_power`, `beta2_power`).

The configuration is inferred from the shapes and from which variables exist: n_layer, d_model,
n_head, d_head, d_inner, n_token, d_embed, div_val, cutoffs, untie_r, proj_same_dim (whether a bin
whose width equals d_model still has a projection) and proj_share_all_but_first (whether the
softmax tail bins lack their own projection). Run settings (tgt_len, mem_len, clamp_len,
same_length, dropout) are not in a checkpoint and come from the caller. The TF1 LayerNorm epsilon
is 1e-12 and the cluster order is the txl-tf (TF) order, so both carry over unchanged.
"""
import re

import numpy as np

from txl_tf.convert.errors import WeightImportError
from txl_tf.convert.source_weights import SourceWeights

PREFIX = "transformer/"
TF1_LAYER_NORM_EPSILON = 1e-12
IGNORED = (
    ("global_step", "training step counter"),
    ("*/Adam", "Adam optimizer slot"),
    ("*/Adam_1", "Adam optimizer slot"),
    ("beta1_power", "Adam accumulator"),
    ("beta2_power", "Adam accumulator"),
)


def read_checkpoint(path):
    """`SourceWeights` of a TF1 checkpoint (a prefix like `.../model.ckpt-0` or a directory)."""
    import tensorflow as tf

    try:
        reader = tf.train.load_checkpoint(path)
    except (ValueError, tf.errors.OpError) as error:
        raise WeightImportError(
            f"cannot read a TF checkpoint at {path!r} ({error}); pass the prefix of the "
            "'.index'/'.data-*' files, e.g. pretrained_xl/tf_wt103/model/model.ckpt-0.") from None
    shapes = reader.get_variable_to_shape_map()
    arrays = {name: (lambda name=name: reader.get_tensor(name)) for name in shapes}
    source = SourceWeights(arrays, shapes, description=f"TF1 checkpoint {path}")
    for pattern, reason in IGNORED:
        source.ignore(pattern, reason)
    return source


def _bins(source, scope, leaf):
    """Sizes of `transformer/{scope}/cutoff_{i}/{leaf}` for i = 0, 1, ... while present."""
    shapes = []
    while f"{PREFIX}{scope}/cutoff_{len(shapes)}/{leaf}" in source:
        shapes.append(source.shape(f"{PREFIX}{scope}/cutoff_{len(shapes)}/{leaf}"))
    return shapes


def infer_config(source, run_settings=None, corpus_cutoffs=None):
    """The `TransformerXLConfig` fields of the checkpoint, plus the caller's run settings.

    Args:
      source: the `SourceWeights` of `read_checkpoint`.
      run_settings: tgt_len, mem_len, clamp_len, same_length, dropout, dropatt, ... (a dict).
      corpus_cutoffs: the `cutoffs` of the reference `corpus-info.json` ([0, c1, ..., V]) or
        None; checked against the checkpoint.

    Returns:
      A dict of fields (pass to `TransformerXLConfig(**fields)`).
    """
    fields = _layer_fields(source)
    n_token, d_embed, div_val, sizes, widths = _embedding_bins(source)
    cutoffs = [int(c) for c in np.cumsum(sizes)[:-1]]
    if corpus_cutoffs is not None:
        _check_corpus_cutoffs(corpus_cutoffs, cutoffs, n_token)
    proj_same_dim = _proj_same_dim(source, widths, fields["d_model"])
    fields.update(
        n_token=int(n_token), d_embed=int(d_embed), div_val=int(div_val), cutoffs=cutoffs,
        proj_same_dim=proj_same_dim,
        proj_share_all_but_first=_proj_share_all_but_first(
            source, sizes, widths, d_embed, div_val, proj_same_dim, fields["d_model"]),
        layer_norm_epsilon=TF1_LAYER_NORM_EPSILON, pre_lnorm=False, attn_type=0)
    fields.update(run_settings or {})
    return fields


def _layer_fields(source):
    """n_layer, d_model, n_head, d_head, d_inner and untie_r, from the layers' shapes."""
    if f"{PREFIX}layer_0/rel_attn/qkv/kernel" not in source:
        raise WeightImportError(
            f"{source.description}: no {PREFIX}layer_0/rel_attn/qkv/kernel; this is not a "
            "checkpoint of the reference TF Transformer-XL (tf/model.py).")
    layers = {int(m.group(1)) for n in source.names
              for m in [re.match(rf"{PREFIX}layer_(\d+)/", n)] if m}
    n_layer = len(layers)
    if layers != set(range(n_layer)):
        raise WeightImportError(f"{source.description}: layer indices {sorted(layers)} are not "
                                "contiguous from 0.")
    d_model, qkv_width = source.shape(f"{PREFIX}layer_0/rel_attn/qkv/kernel")
    bias_shape = source.shape(f"{PREFIX}r_w_bias")
    untie_r = len(bias_shape) == 3
    n_head, d_head = bias_shape[-2:]
    if 3 * n_head * d_head != qkv_width:
        raise WeightImportError(
            f"qkv/kernel has {qkv_width} columns but r_w_bias {bias_shape} gives 3 * {n_head} * "
            f"{d_head} = {3 * n_head * d_head}.")
    if untie_r and bias_shape[0] != n_layer:
        raise WeightImportError(f"untied r_w_bias {bias_shape} does not have {n_layer} layers.")
    d_inner = source.shape(f"{PREFIX}layer_0/ff/layer_1/kernel")[1]
    return dict(n_layer=n_layer, d_model=int(d_model), n_head=int(n_head), d_head=int(d_head),
                d_inner=int(d_inner), untie_r=untie_r)


def _embedding_bins(source):
    """(n_token, d_embed, div_val, tokens per softmax bin, embedding width per bin or None)."""
    if f"{PREFIX}adaptive_embed/lookup_table" in source:
        n_token, d_embed = source.shape(f"{PREFIX}adaptive_embed/lookup_table")
        if f"{PREFIX}adaptive_softmax/bias" in source:
            return n_token, d_embed, 1, [n_token], None
        sizes = [s[0] for s in _bins(source, "adaptive_softmax", "b")]
        if not sizes:
            raise WeightImportError(f"{source.description}: neither adaptive_softmax/bias "
                                    "nor adaptive_softmax/cutoff_0/b exists.")
        _check_bins_add_up(sizes, n_token)
        return n_token, d_embed, 1, sizes, None
    tables = _bins(source, "adaptive_embed", "lookup_table")
    if len(tables) < 2:
        raise WeightImportError(
            f"{source.description}: no adaptive_embed/lookup_table and {len(tables)} "
            "adaptive_embed/cutoff_i/lookup_table; an adaptive embedding needs either one "
            "table (div_val 1) or one per bin (div_val > 1, at least one cutoff).")
    sizes, widths = [t[0] for t in tables], [t[1] for t in tables]
    d_embed, div_val = widths[0], widths[0] // widths[1]
    if div_val < 2 or any(w != d_embed // div_val ** i for i, w in enumerate(widths)):
        raise WeightImportError(f"embedding widths {widths} are not d_embed // div_val**i "
                                "for any integer div_val > 1.")
    return sum(sizes), d_embed, div_val, sizes, widths


def _check_bins_add_up(sizes, n_token):
    if sum(sizes) != n_token:
        raise WeightImportError(f"softmax bins {sizes} do not add up to the {n_token} tokens "
                                "of the embedding table.")


def _check_corpus_cutoffs(corpus_cutoffs, cutoffs, n_token):
    """The reference corpus-info.json's cutoffs ([0, c1, ..., V]) must be the checkpoint's."""
    expected = [int(c) for c in corpus_cutoffs]
    if expected[:1] == [0]:
        expected = expected[1:]
    if expected and expected[-1] == n_token:
        expected = expected[:-1]
    if expected != cutoffs:
        raise WeightImportError(
            f"corpus-info.json cutoffs {list(corpus_cutoffs)} do not match the checkpoint's "
            f"bins (cutoffs {cutoffs}, n_token {n_token}); this corpus info belongs to "
            "another model.")


def _proj_same_dim(source, widths, d_model):
    """Observable only through a div_val > 1 bin whose width equals d_model."""
    same = [i for i, w in enumerate(widths or []) if w == d_model]
    if not same:
        return True
    return f"{PREFIX}adaptive_embed/cutoff_{same[0]}/proj_W" in source


def _proj_share_all_but_first(source, sizes, widths, d_embed, div_val, proj_same_dim, d_model):
    """Whether the softmax tail bins that need a projection all lack their own."""
    def needs_projection(i):
        width = d_embed if widths is None else widths[i]
        return not ((div_val == 1 or not proj_same_dim) and width == d_model)

    needing = [i for i in range(1, len(sizes)) if needs_projection(i)]
    tied = [i for i in needing if f"{PREFIX}adaptive_softmax/cutoff_{i}/proj" not in source]
    return bool(needing) and len(tied) == len(needing)


def map_weights(source, config, expected_names):
    """{txl-tf variable name: array} for a model of `config` whose variables are
    `expected_names`; marks every source variable it reads as used."""
    c = config
    d, n, h = c.d_model, c.n_head, c.d_head
    take = source.take
    out = {"r_w_bias": take(f"{PREFIX}r_w_bias"), "r_r_bias": take(f"{PREFIX}r_r_bias")}
    for layer in range(c.n_layer):
        src, dst = f"{PREFIX}layer_{layer}/", f"layer_{layer}/"
        out[dst + "rel_attn/qkv"] = take(src + "rel_attn/qkv/kernel").reshape(d, 3, n, h)
        out[dst + "rel_attn/r"] = take(src + "rel_attn/r/kernel").reshape(d, n, h)
        out[dst + "rel_attn/o"] = take(src + "rel_attn/o/kernel").reshape(n, h, d)
        for block, norm in (("rel_attn", "rel_attn/LayerNorm"), ("ff", "ff/LayerNorm")):
            out[dst + f"{block}/layer_norm/gamma"] = take(src + f"{norm}/gamma")
            out[dst + f"{block}/layer_norm/beta"] = take(src + f"{norm}/beta")
        for dense in ("layer_1", "layer_2"):
            out[dst + f"ff/{dense}/kernel"] = take(src + f"ff/{dense}/kernel")
            out[dst + f"ff/{dense}/bias"] = take(src + f"ff/{dense}/bias")

    emb = f"{PREFIX}adaptive_embed/"
    embedding_projection = {}  # bin -> source name of the embedding projection
    if c.div_val == 1:
        out["adaptive_embed/lookup_table"] = take(emb + "lookup_table")
        if emb + "proj_W" in source:
            out["adaptive_embed/proj_W"] = take(emb + "proj_W")
            embedding_projection = {i: emb + "proj_W" for i in range(len(c.cutoffs) + 1)}
    else:
        for i in range(len(c.cutoffs) + 1):
            out[f"adaptive_embed/cutoff_{i}_lookup_table"] = take(emb + f"cutoff_{i}/lookup_table")
            if emb + f"cutoff_{i}/proj_W" in source:
                out[f"adaptive_embed/cutoff_{i}_proj_W"] = take(emb + f"cutoff_{i}/proj_W")
                embedding_projection[i] = emb + f"cutoff_{i}/proj_W"

    soft = f"{PREFIX}adaptive_softmax/"
    if not c.cutoffs:
        out["adaptive_softmax/bias"] = take(soft + "bias")
    else:
        out["adaptive_softmax/cluster_W"] = take(soft + "cutoff_0/cluster_W")
        out["adaptive_softmax/cluster_b"] = take(soft + "cutoff_0/cluster_b")
        for i in range(len(c.cutoffs) + 1):
            out[f"adaptive_softmax/cutoff_{i}_b"] = take(soft + f"cutoff_{i}/b")
            name = f"adaptive_softmax/cutoff_{i}_proj"
            if soft + f"cutoff_{i}/proj" in source:
                out[name] = take(soft + f"cutoff_{i}/proj")
            elif name in expected_names and i in embedding_projection:
                # A tail bin tied in the checkpoint while others are not: txl-tf shares all tail
                # projections or none, so this bin gets a copy of the embedding projection.
                out[name] = source.peek(embedding_projection[i])
    return out
