"""`TransformerXLConfig`: every hyperparameter of the reference implementation, validated.

The field names are the reference's flag names (kimiyoung/transformer-xl `tf/train_gpu.py`), so a
reference recipe translates field by field. The defaults are the reference's defaults.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Optional, Tuple

from txl_tf.model.attention_variants import attention_variant, attention_variants, attn_type_help
from txl_tf.runtime.ranges import Range, check_fields
from untrusted_files import reading


INT32_MAX = 2**31 - 1
# The deepest stack built: the paper's largest models have 24 layers.
MAX_N_LAYER = 1024


class ConfigError(ValueError):
    """An impossible or inconsistent `TransformerXLConfig`."""


@dataclasses.dataclass(frozen=True)
class TransformerXLConfig:
    """Hyperparameters of a Transformer-XL language model.

    Shapes: V vocabulary, L layers, D d_model, N heads of size H, Q segment length, M memory
    length. Initialisers as the reference: N(0, init_std) for kernels, tables and the u/v biases,
    N(0, proj_init_std) for projections, U(-init_range, init_range) for everything with
    init='uniform'. d_embed None means D (a flag spells it -1); bin i of the adaptive embedding
    has width d_embed // div_val**i; untie_r gives u/v of shape [L, N, H] instead of one shared
    [N, H] pair; clamp_len > 0 clips relative distances to at most clamp_len (-1 or 0: no
    clipping); with same_length every query attends to M + 1 keys. The run settings (tgt_len,
    mem_len, clamp_len, same_length, dropout, dropatt) do not change the weights; evaluation may
    change them. runners/cli/model_flags.py generates the model flags from the entries below
    (an entry is the flag's help).

    Attributes:
      n_token: Vocabulary size V.
      n_layer: Number of layers L.
      d_model: Model width D.
      n_head: Attention heads N.
      d_head: Size H of each head.
      d_inner: Feed-forward inner width.
      d_embed: Embedding width (-1: d_model).
      div_val: Adaptive embedding divisor.
      cutoffs: Increasing token ids where the adaptive softmax bins start (empty: plain softmax).
      proj_share_all_but_first: Softmax tail bins reuse the embedding projections.
      proj_same_dim: Project a bin even when its width equals d_model.
      untie_r: One u/v bias pair per layer.
      dropout: Dropout rate.
      dropatt: Attention dropout rate.
      tgt_len: Segment length Q.
      mem_len: Memory length M.
      clamp_len: Clamp relative distances (-1: none).
      same_length: Same attention length for every query.
      attn_type: Position encoding (txl_tf/model/attention_variants.py): <attn_type_help>
      max_klen: Rows of the learned position tables of attn_type 1 and 3 (default tgt_len +
        mem_len, fixed when the config is made, so evaluation with other lengths keeps the
        trained tables; must stay unset for attn_type 0 and 2).
      pre_lnorm: Pre-LayerNorm (the reference TF is post-LN).
      init: Initialiser.
      init_std: Std of the normal initialiser.
      proj_init_std: Std of projection initialisers.
      init_range: Range of the uniform initialiser.
      layer_norm_epsilon: LayerNorm epsilon (1e-12 as the reference TF LayerNorm).
    """

    n_token: int
    n_layer: int = 6
    d_model: int = 500
    n_head: int = 10
    d_head: int = 50
    d_inner: int = 1000
    d_embed: Optional[int] = None
    div_val: int = 1
    cutoffs: Tuple[int, ...] = ()
    proj_share_all_but_first: bool = False
    proj_same_dim: bool = True
    untie_r: bool = False
    dropout: float = 0.1
    dropatt: float = 0.1
    tgt_len: int = 70
    mem_len: int = 70
    clamp_len: int = -1
    same_length: bool = False
    attn_type: int = 0
    max_klen: Optional[int] = None
    pre_lnorm: bool = False
    init: str = "normal"
    init_std: float = 0.02
    proj_init_std: float = 0.01
    init_range: float = 0.1
    layer_norm_epsilon: float = 1e-12

    # The declared range of every number (txl_tf/runtime/ranges.py): checked by _validate, and
    # the model flags' ranges and --help (runners/cli/model_flags.py).
    RANGES = {
        "n_token": Range(1, INT32_MAX, "ids are int32 in the graph"),
        "n_layer": Range(1, MAX_N_LAYER, "each layer is a part of every traced step; the "
                                         "paper's deepest models have 24"),
        "d_model": Range(2, INT32_MAX, "even: sin and cos halves of the encoding"),
        "n_head": Range(1, INT32_MAX, "shapes are int32 in the graph"),
        "d_head": Range(1, INT32_MAX, "shapes are int32 in the graph"),
        "d_inner": Range(1, INT32_MAX, "shapes are int32 in the graph"),
        "d_embed": Range(1, INT32_MAX, "shapes are int32 in the graph"),
        "div_val": Range(1, INT32_MAX, "1: one embedding width"),
        "dropout": Range(0.0, 1.0, "a rate", open_high=True, integer=False),
        "dropatt": Range(0.0, 1.0, "a rate", open_high=True, integer=False),
        "tgt_len": Range(1, INT32_MAX, "lengths are int32 in the graph"),
        "mem_len": Range(0, INT32_MAX, "0: no memory"),
        "clamp_len": Range(0, INT32_MAX, "-1: no clamping", also=(-1,)),
        "attn_type": Range(0, INT32_MAX, "a registered attention variant"),
        "max_klen": Range(1, INT32_MAX, "rows of the learned position tables"),
        "init_std": Range(0.0, None, "a standard deviation", open_low=True, integer=False),
        "proj_init_std": Range(0.0, None, "a standard deviation", open_low=True,
                               integer=False),
        "init_range": Range(0.0, None, "a half-width", open_low=True, integer=False),
        "layer_norm_epsilon": Range(0.0, None, "added to the variance", open_low=True,
                                    integer=False),
    }

    def __post_init__(self):
        if self.d_embed is None:
            object.__setattr__(self, "d_embed", self.d_model)
        cutoffs = self.cutoffs
        if isinstance(cutoffs, str):
            cutoffs = [int(c) for c in cutoffs.split(",") if c.strip()]
        object.__setattr__(self, "cutoffs", tuple(int(c) for c in cutoffs))
        if (self.max_klen is None and self._has_learned_tables()
                and isinstance(self.tgt_len, int) and isinstance(self.mem_len, int)):
            object.__setattr__(self, "max_klen", self.tgt_len + self.mem_len)
        self._validate()

    # ----------------------------------------------------------------------------------------
    def _validate(self):
        def fail(message):
            raise ConfigError(f"TransformerXLConfig: {message}")

        check_fields(self, ConfigError, prefix="TransformerXLConfig: ")
        if self.d_model % 2:
            fail(f"d_model must be even (sin and cos halves of the encoding), got {self.d_model}.")
        previous = 0
        for c in self.cutoffs:
            if c <= previous:
                fail(f"cutoffs must be strictly increasing positive token ids, got "
                     f"{list(self.cutoffs)}.")
            previous = c
        if self.cutoffs and self.cutoffs[-1] >= self.n_token:
            fail(f"every cutoff must be < n_token ({self.n_token}), got {list(self.cutoffs)}; "
                 "drop the cutoffs at or above the vocabulary size.")
        if self.div_val > 1:
            smallest = self.d_embed // self.div_val ** len(self.cutoffs)
            if smallest < 1:
                fail(f"div_val={self.div_val} with {len(self.cutoffs)} cutoffs makes the last "
                     f"bin's embedding width d_embed // div_val**{len(self.cutoffs)} = 0; lower "
                     "div_val or raise d_embed.")
        self._validate_attn_type(fail)
        if self.init not in ("normal", "uniform"):
            fail(f"init must be 'normal' or 'uniform', got {self.init!r}.")

    def _is_known_variant(self) -> bool:
        return any(v.attn_type == self.attn_type for v in attention_variants())

    def _has_learned_tables(self) -> bool:
        return self._is_known_variant() and self.attention_variant.learned_tables

    def _validate_attn_type(self, fail):
        if not self._is_known_variant():
            known = ", ".join(f"{v.attn_type} ({v.encoding})" for v in attention_variants())
            fail(f"attn_type={self.attn_type!r} is not implemented; use one of {known}.")
        if self._has_learned_tables():
            if not isinstance(self.max_klen, int) or isinstance(self.max_klen, bool) \
                    or self.max_klen < 1:
                fail(f"max_klen (rows of the learned position tables) must be a positive "
                     f"integer, got {self.max_klen!r}.")
            if self.untie_r:
                fail(f"untie_r applies to the u/v biases of the relative sinusoids only; "
                     f"attn_type={self.attn_type} has its own biases per layer: set "
                     "untie_r=False.")
        elif self.max_klen is not None:
            fail(f"max_klen is the length of learned position tables; attn_type="
                 f"{self.attn_type} has none: leave max_klen unset (None).")

    # ----------------------------------------------------------------------------------------
    @property
    def attention_variant(self):
        """The `AttentionVariant` record of attn_type (`txl_tf/model/attention_variants.py`)."""
        return attention_variant(self.attn_type)

    @property
    def n_clusters(self) -> int:
        """Number of tail bins of the adaptive softmax."""
        return len(self.cutoffs)

    @property
    def cutoff_ends(self) -> Tuple[int, ...]:
        """Bin boundaries including both ends: (0, c1, ..., ck, n_token)."""
        return (0,) + self.cutoffs + (self.n_token,)

    @property
    def tie_projs(self) -> Tuple[bool, ...]:
        """Per softmax bin: reuse the embedding projection (bin 0 never does)."""
        return (False,) + (bool(self.proj_share_all_but_first),) * self.n_clusters

    def replace(self, **changes) -> "TransformerXLConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["cutoffs"] = list(self.cutoffs)
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "TransformerXLConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"TransformerXLConfig: unknown field(s) {unknown}; known fields are "
                f"{sorted(known)}.")
        if "n_token" not in values:
            raise ConfigError("TransformerXLConfig: n_token (the vocabulary size) is required.")
        return cls(**dict(values))

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TransformerXLConfig":
        if reading.nesting_depth(text) > reading.MAX_JSON_DEPTH:
            raise ConfigError(f"TransformerXLConfig: JSON nested more than "
                              f"{reading.MAX_JSON_DEPTH} deep; give the config.json the model "
                              "was saved with.")
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"TransformerXLConfig: not valid JSON ({error}).") from None
        if not isinstance(values, dict):
            raise ConfigError("TransformerXLConfig: JSON must hold an object of fields.")
        return cls.from_dict(values)


# The attn_type help (and so `--attn_type`'s) lists the records of
# txl_tf/model/attention_variants.py.
TransformerXLConfig.__doc__ = TransformerXLConfig.__doc__.replace("<attn_type_help>",
                                                                  attn_type_help())


# Fields whose values change weight shapes: a mismatch with a saved model is an error.
SHAPE_FIELDS = ("n_token", "n_layer", "d_model", "n_head", "d_head", "d_inner", "d_embed",
                "div_val", "cutoffs", "proj_share_all_but_first", "proj_same_dim", "untie_r",
                "attn_type")
# Run settings: may differ between training and evaluation.
RUN_FIELDS = ("tgt_len", "mem_len", "clamp_len", "same_length", "dropout", "dropatt")


def check_against_saved(config: TransformerXLConfig, saved: TransformerXLConfig, where: str,
                        fields: Tuple[str, ...] = SHAPE_FIELDS) -> None:
    """Check that `config` can load the weights of the saved configuration `saved`.

    Args:
      config: the configuration of this run (from flags or code).
      saved: the configuration of an existing model directory (its config.json).
      where: how messages name `saved`, e.g. the path of that config.json.
      fields: the fields that must be equal (default: those that change weight shapes).

    Raises:
      ConfigError: one message naming every differing field and the fix.
    """
    diffs = [f"{name}: flags give {getattr(config, name)!r}, {where} has {getattr(saved, name)!r}"
             for name in fields if getattr(config, name) != getattr(saved, name)]
    if config.n_head * config.d_head != saved.n_head * saved.d_head:
        diffs.append(f"n_head * d_head: flags give {config.n_head * config.d_head}, {where} has "
                     f"{saved.n_head * saved.d_head}")
    if diffs:
        raise ConfigError(
            f"the model flags do not match {where}:\n  " + "\n  ".join(diffs)
            + "\nPass the flags the checkpoint was trained with (its config.json), or use a new "
            "--model_dir.")


# Vocabularies of at least this size get automatic cutoffs (`--cutoffs=auto`); smaller ones a
# plain softmax.
AUTO_CUTOFFS_MIN_VOCAB = 16_384


def auto_cutoffs(n_token: int) -> tuple:
    """Adaptive-softmax cutoffs for a vocabulary of `n_token` ids sorted by frequency.

    The head keeps the most frequent sixteenth of the vocabulary (in text that follows Zipf's
    law, most of the tokens), the first tail bin the next 3/16, the second tail bin the rest:
    each token costs the head's logits and, for the few in a tail, that bin's.

    Args:
      n_token: the vocabulary size V.

    Returns:
      () below `AUTO_CUTOFFS_MIN_VOCAB`, else (V // 16, V // 4) rounded down to hundreds.

    Example:
      >>> auto_cutoffs(21_876)
      (1300, 5400)
    """
    if n_token < AUTO_CUTOFFS_MIN_VOCAB:
        return ()
    return tuple(n_token // parts // 100 * 100 for parts in (16, 4))
