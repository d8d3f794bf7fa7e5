"""The variant table of the ablation (`txl_tf.ablation.variants`): the paper's Table 6 rows,
their configurations (same sizes) and their parameter counts (position parameters only
differ)."""
import pytest
import tensorflow as tf

import txl_tf
from txl_tf.ablation import (DEFAULT_VARIANTS, VARIANTS, VariantError, select_variants,
                             variant_config)

from tiny import tiny_config

BASE = tiny_config(n_token=16, mem_len=5, untie_r=True, dropout=0.1, dropatt=0.1, init_std=0.02)
SIZES = ("n_token", "n_layer", "d_model", "n_head", "d_head", "d_inner", "tgt_len", "cutoffs",
         "div_val", "dropout", "dropatt", "clamp_len", "same_length", "pre_lnorm")


def test_the_rows_of_table_6_in_order():
    # (recurrence, encoding, loss, PPL init, PPL best, Attn Len) of the paper's 128M block.
    paper = [(True, 0, "full", 27.02, 26.77, 500), (True, 1, "full", 27.94, 27.94, 256),
             (True, 0, "half", 28.69, 28.33, 460), (False, 0, "full", 29.59, 29.02, 260),
             (False, 0, "half", 30.10, 30.10, 120), (False, 1, "full", 29.75, 29.75, 120),
             (False, 1, "half", 30.50, 30.50, 120), (False, 2, "half", 30.97, 30.97, 120),
             (False, 3, "half", 31.16, 31.16, 120)]
    rows = [v for v in VARIANTS if v.in_paper]
    assert [(v.recurrence, v.attn_type, v.loss) + v.paper for v in rows] == paper
    extra = [v for v in VARIANTS if not v.in_paper]
    assert [(v.name, v.recurrence, v.attn_type, v.loss, v.paper) for v in extra] == [
        ("vaswani-rec-half", True, 2, "half", None)]
    names = [v.name for v in VARIANTS]
    assert len(set(names)) == len(names)
    for v in VARIANTS:  # the name says what the variant is
        kind = {0: "ours", 1: "shaw", 2: "vaswani", 3: "alrfou"}[v.attn_type]
        assert v.name == f"{kind}-{'rec' if v.recurrence else 'norec'}-{v.loss}"


def test_selection():
    assert [v.name for v in select_variants(DEFAULT_VARIANTS)] == list(DEFAULT_VARIANTS)
    assert select_variants(["all"]) == VARIANTS
    assert [v.name for v in select_variants(["shaw-rec-full", "ours-rec-full"])] == [
        "shaw-rec-full", "ours-rec-full"]
    for bad in (["nope"], [], ["ours-rec-full", "ours-rec-full"]):
        with pytest.raises(VariantError, match="--variants"):
            select_variants(bad)


def test_configs_change_only_the_encoding_and_the_memory():
    for v in VARIANTS:
        c = variant_config(BASE, v)
        assert all(getattr(c, f) == getattr(BASE, f) for f in SIZES), v.name
        assert c.attn_type == v.attn_type
        assert c.mem_len == (BASE.mem_len if v.recurrence else 0)
        assert c.max_klen == (c.tgt_len + c.mem_len if v.attn_type in (1, 3) else None)
        assert c.untie_r == (v.attn_type == 0)
    with pytest.raises(VariantError, match="--mem_len"):
        variant_config(BASE.replace(mem_len=0), VARIANTS[0])


def count(config):
    model = txl_tf.TransformerXL(config)
    mems = model.init_mems(1) if config.mem_len else None
    model(tf.zeros([1, config.tgt_len], tf.int32), mems=mems)
    return model.count_params()


def test_parameter_budget_differs_by_the_position_parameters_only():
    n, h, d, layers = BASE.n_head, BASE.d_head, BASE.d_model, BASE.n_layer
    without = count(variant_config(BASE, select_variants(["vaswani-norec-half"])[0]))
    for v in VARIANTS:
        c = variant_config(BASE, v)
        x = c.max_klen or 0  # rows of the learned tables (attn_type 1 and 3)
        extra = {0: 2 * layers * n * h + layers * d * n * h,  # untied u, v; r projection
                 1: layers * (x * n * h + n * h + x * n),  # r_emb, r_w_bias, r_bias
                 2: 0,
                 3: layers * x * d}[v.attn_type]  # a learned position table per layer
        assert count(c) == without + extra, v.name
