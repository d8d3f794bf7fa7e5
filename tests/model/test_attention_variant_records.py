"""The records of `txl_tf/model/attention_variants.py` against the models built from them: each
record's weights are exactly what its model adds to the position-free model, its attention class is
the one every block holds, and the `--attn_type` help lists every record."""
import keras
import numpy as np
import pytest

import txl_tf
from runners.cli.dataclass_flags import attribute_docs
from txl_tf.model.attention_variants import ATTENTION_VARIANTS, attention_variant, attn_type_help

from tiny import tiny_config


def weight_shapes(config):
    """{path under the model: shape} of every weight of a model of `config`."""
    model = txl_tf.TransformerXL(config)
    return {v.path.split("/", 1)[1]: tuple(v.shape) for v in model.weights}, model


def position_free(config):
    """The weights of the same sizes without any position weights (no record involved: the
    base is read off the model of the vanilla encoding and checked to hold none)."""
    shapes, _ = weight_shapes(config.replace(attn_type=2, max_klen=None, untie_r=False))
    assert not [p for p in shapes if p.startswith(("r_", "pos_emb")) or "/rel_attn/r" in p]
    return shapes


# untie_r exists for the u/v biases of the relative sinusoids only.
@pytest.mark.parametrize("variant,untie_r", [
    (v, untie_r) for v in ATTENTION_VARIANTS
    for untie_r in ((False, True) if v.relative_sinusoids else (False,))])
def test_a_record_lists_the_weights_its_model_adds(variant, untie_r):
    config = variant.configure(tiny_config(mem_len=5, untie_r=untie_r))
    shapes, _ = weight_shapes(config)
    base = position_free(config)
    added = {path: shape for path, shape in shapes.items() if path not in base}
    assert {p: shapes[p] for p in base} == base
    assert added == variant.weight_shapes(config)
    layers, n, h, d = config.n_layer, config.n_head, config.d_head, config.d_model
    t = config.max_klen or 0
    expected_counts = {"ours": 2 * (layers if untie_r else 1) * n * h + layers * d * n * h,
                       "shaw": layers * (t * n * h + t * n + n * h), "vaswani": 0,
                       "alrfou": layers * t * d}
    assert sum(int(np.prod(s)) for s in added.values()) == expected_counts[variant.name]


@pytest.mark.parametrize("variant", ATTENTION_VARIANTS, ids=lambda v: v.name)
def test_every_block_holds_the_records_attention_and_positions(variant):
    config = variant.configure(tiny_config())
    _, model = weight_shapes(config)
    assert model.variant is variant
    assert {keras.saving.get_registered_name(type(block.attention))
            for block in model.blocks} == {variant.attention}
    assert model.absolute_positions == variant.absolute_positions
    assert len(model.absolute_embeddings) == (config.n_layer if variant.layer_embeddings else 0)
    assert (config.max_klen is not None) == variant.learned_tables


def test_the_records_are_distinct_and_found_by_attn_type():
    for field in ("attn_type", "name", "encoding"):
        values = [getattr(v, field) for v in ATTENTION_VARIANTS]
        assert len(set(values)) == len(values), field
    assert [attention_variant(v.attn_type) for v in ATTENTION_VARIANTS] == \
        list(ATTENTION_VARIANTS)


def test_the_attn_type_flag_help_lists_every_record():
    help_text = attribute_docs(txl_tf.TransformerXLConfig)["attn_type"]
    assert help_text.endswith(attn_type_help())
    with pytest.raises(txl_tf.ConfigError, match="attn_type=4 is not implemented"):
        tiny_config(attn_type=4)
