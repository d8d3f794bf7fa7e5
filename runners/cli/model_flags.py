"""The model flags, generated from `TransformerXLConfig`, and flags -> `ConfigTemplate` (the
configuration whose vocabulary is the data's) or `TransformerXLConfig`.

The flag names are the config's field names (the reference's flag names), the help texts are the
entries of its `Attributes:` docstring section and the defaults are its defaults, with two flag
spellings: `--d_embed=-1` for d_embed None (= d_model) and `--cutoffs`, a text ('auto', 'none'
or comma-separated ids) because its default comes from the data: the corpus-info.json's cutoffs,
else those of `txl_tf.model.config.auto_cutoffs` for the vocabulary size. A runner
that wants other defaults passes a named preset (`SMALL_MODEL`). `n_token` has no flag: the
vocabulary size is the data's.
"""
from typing import Mapping, Optional, Sequence

from absl import flags

import txl_tf
from runners.cli import dataclass_flags
from txl_tf.model.config import AUTO_CUTOFFS_MIN_VOCAB, INT32_MAX
from txl_tf.model.config_template import PLACEHOLDER_VOCAB, ConfigTemplate
from txl_tf.runtime.ranges import Range

# Fields without a generated flag: n_token comes from the data, cutoffs is the text flag below,
# layer_norm_epsilon is the reference's (only imported weights change it).
_NOT_FLAGS = ("n_token", "cutoffs", "layer_norm_epsilon")
_FLAG_DEFAULTS = dict(d_embed=-1)
_FLAG_RANGES = dict(d_embed=Range(1, INT32_MAX, "-1: d_model", also=(-1,)))
_CUTOFFS_HELP = ("Comma-separated adaptive softmax cutoffs; 'auto' (or empty): the corpus' "
                 "cutoffs from corpus-info.json, else for a vocabulary of at least "
                 f"{AUTO_CUTOFFS_MIN_VOCAB:,} about V/16 and V/4; 'none': plain softmax.")

# The no-flags model of runners/train.py (spelled out in runners/default.flags): small enough to
# learn the built-in corpus in a few CPU minutes. The config's own defaults stay the reference's.
SMALL_MODEL = dict(n_layer=4, d_model=128, n_head=4, d_head=32, d_inner=512, tgt_len=64,
                   mem_len=64, dropout=0.0, dropatt=0.0)


def define_model_flags(flag_values: flags.FlagValues = flags.FLAGS,
                       defaults: Optional[Mapping] = None) -> list:
    """Defines the model flags in `flag_values`; returns their names.

    Args:
      flag_values: where to define them.
      defaults: field -> default overriding the config's (a preset such as `SMALL_MODEL`;
        `cutoffs` as the flag's text).
    """
    defaults = {**_FLAG_DEFAULTS, **(defaults or {})}
    names = dataclass_flags.define_flags(
        txl_tf.TransformerXLConfig, flag_values, defaults=defaults,
        enums={"init": ("normal", "uniform")}, skip=_NOT_FLAGS, ranges=_FLAG_RANGES)
    flags.DEFINE_string("cutoffs", defaults.get("cutoffs", "auto"), _CUTOFFS_HELP,
                        flag_values=flag_values)
    return names + ["cutoffs"]


def parse_cutoffs(text: str) -> Optional[tuple]:
    """The cutoffs of the `--cutoffs` text: None for '' or 'auto' (the data's, chosen by
    `ConfigTemplate.for_data`); () for 'none'; else the given ids."""
    text = (text or "").strip().lower()
    if text in ("", "auto"):
        return None
    if text == "none":
        return ()
    try:
        return tuple(int(c) for c in text.split(",") if c.strip())
    except ValueError:
        raise txl_tf.ConfigError(f"--cutoffs must be comma-separated integers, 'auto' or 'none', "
                                 f"got {text!r}.") from None


def template_from_flags(flag_values) -> ConfigTemplate:
    """The `ConfigTemplate` of the model flags: the configuration whose vocabulary (n_token and,
    with `--cutoffs=auto`, the cutoffs) is the data's.

    Args:
      flag_values: the parsed flags of `define_model_flags`.

    Raises:
      ConfigError: a bad `--cutoffs` text or invalid model flags.
    """
    cutoffs = parse_cutoffs(flag_values.cutoffs)
    d_embed = flag_values.d_embed
    config = dataclass_flags.options_from_flags(
        txl_tf.TransformerXLConfig, flag_values, skip=_NOT_FLAGS, n_token=PLACEHOLDER_VOCAB,
        cutoffs=cutoffs or (), d_embed=None if d_embed in (None, -1) else d_embed)
    return ConfigTemplate(config, data_cutoffs=cutoffs is None)


def config_from_flags(flag_values, n_token: int,
                      corpus_cutoffs: Sequence[int] = ()) -> txl_tf.TransformerXLConfig:
    """The `TransformerXLConfig` of the model flags.

    Args:
      flag_values: the parsed flags of `define_model_flags`.
      n_token: the vocabulary size V.
      corpus_cutoffs: the data's cutoffs; those at or above n_token are dropped (explicit
        `--cutoffs` must be right). With none, `--cutoffs=auto` chooses them for n_token.
    """
    return template_from_flags(flag_values).for_data(n_token, corpus_cutoffs)
