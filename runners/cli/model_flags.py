"""absl flags of the model, with the reference's names, and flags -> `TransformerXLConfig`.

Shared by every runner: `define_model_flags()` once at import time of the runner, then
`config_from_flags(FLAGS, n_token, cutoffs)` (the vocabulary size and default cutoffs come from
the data's corpus-info.json).
"""
from typing import Optional, Sequence

from absl import flags

import txl_tf

def define_model_flags(small_defaults: Optional[dict] = None,
                       flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Define the model flags in `flag_values`. `small_defaults` overrides the defaults (e.g.
    the no-flags training run)."""
    d = dict(n_layer=6, d_model=500, n_head=10, d_head=50, d_inner=1000, d_embed=-1, div_val=1,
             cutoffs="", untie_r=False, proj_share_all_but_first=False, proj_same_dim=True,
             dropout=0.1, dropatt=0.1, tgt_len=70, mem_len=70, clamp_len=-1, same_length=False,
             attn_type=0, pre_lnorm=False, init="normal", init_std=0.02, proj_init_std=0.01,
             init_range=0.1)
    d.update(small_defaults or {})
    fv = dict(flag_values=flag_values)

    def define_integer(*args):
        flags.DEFINE_integer(*args, **fv)

    def define_string(*args):
        flags.DEFINE_string(*args, **fv)

    def define_bool(*args):
        flags.DEFINE_bool(*args, **fv)

    def define_float(*args):
        flags.DEFINE_float(*args, **fv)

    def define_enum(*args):
        flags.DEFINE_enum(*args, **fv)

    define_integer("n_layer", d["n_layer"], "Number of layers L.")
    define_integer("d_model", d["d_model"], "Model width D.")
    define_integer("n_head", d["n_head"], "Attention heads N.")
    define_integer("d_head", d["d_head"], "Size H of each head.")
    define_integer("d_inner", d["d_inner"], "Feed-forward inner width.")
    define_integer("d_embed", d["d_embed"], "Embedding width (-1: d_model).")
    define_integer("div_val", d["div_val"], "Adaptive embedding divisor.")
    define_string("cutoffs", d["cutoffs"],
                        "Comma-separated adaptive softmax cutoffs; 'auto' (default when empty "
                        "and the corpus defines them): the corpus' cutoffs from corpus-info.json; "
                        "'none': plain softmax.")
    define_bool("untie_r", d["untie_r"], "One u/v bias pair per layer.")
    define_bool("proj_share_all_but_first", d["proj_share_all_but_first"],
                      "Softmax tail bins reuse the embedding projections.")
    define_bool("proj_same_dim", d["proj_same_dim"],
                      "Project a bin even when its width equals d_model.")
    define_float("dropout", d["dropout"], "Dropout rate.")
    define_float("dropatt", d["dropatt"], "Attention dropout rate.")
    define_integer("tgt_len", d["tgt_len"], "Segment length Q.")
    define_integer("mem_len", d["mem_len"], "Memory length M.")
    define_integer("clamp_len", d["clamp_len"], "Clamp relative distances (-1: none).")
    define_bool("same_length", d["same_length"], "Same attention length for every query.")
    define_integer("attn_type", d["attn_type"], "0 Transformer-XL, 2 vanilla.")
    define_bool("pre_lnorm", d["pre_lnorm"], "Pre-LayerNorm (the reference TF is post-LN).")
    define_enum("init", d["init"], ["normal", "uniform"], "Initialiser.")
    define_float("init_std", d["init_std"], "Std of the normal initialiser.")
    define_float("proj_init_std", d["proj_init_std"], "Std of projection initialisers.")
    define_float("init_range", d["init_range"], "Range of the uniform initialiser.")


def parse_cutoffs(text: str, corpus_cutoffs: Sequence[int] = ()) -> tuple:
    text = (text or "").strip().lower()
    if text in ("", "auto"):
        return tuple(int(c) for c in corpus_cutoffs)
    if text == "none":
        return ()
    try:
        return tuple(int(c) for c in text.split(",") if c.strip())
    except ValueError:
        raise txl_tf.ConfigError(f"--cutoffs must be comma-separated integers, 'auto' or 'none', "
                                 f"got {text!r}.") from None


def config_from_flags(flag_values, n_token: int,
                      corpus_cutoffs: Sequence[int] = ()) -> txl_tf.TransformerXLConfig:
    """The `TransformerXLConfig` of the model flags. Cutoffs at or above n_token are dropped only
    when they come from the corpus (explicit flags must be right)."""
    f = flag_values
    cutoffs = parse_cutoffs(f.cutoffs, corpus_cutoffs)
    if (f.cutoffs or "").strip().lower() in ("", "auto"):
        cutoffs = tuple(c for c in cutoffs if c < n_token)
    return txl_tf.TransformerXLConfig(
        n_token=n_token, n_layer=f.n_layer, d_model=f.d_model, n_head=f.n_head, d_head=f.d_head,
        d_inner=f.d_inner, d_embed=None if f.d_embed in (None, -1, 0) else f.d_embed,
        div_val=f.div_val, cutoffs=cutoffs, proj_share_all_but_first=f.proj_share_all_but_first,
        proj_same_dim=f.proj_same_dim, untie_r=f.untie_r, dropout=f.dropout, dropatt=f.dropatt,
        tgt_len=f.tgt_len, mem_len=f.mem_len, clamp_len=f.clamp_len, same_length=f.same_length,
        attn_type=f.attn_type, pre_lnorm=f.pre_lnorm, init=f.init, init_std=f.init_std,
        proj_init_std=f.proj_init_std, init_range=f.init_range)
