"""The attention variants of the paper's ablation (Table 6): one description record each.

`TransformerXLConfig.attn_type` names one of `ATTENTION_VARIANTS` with the reference PyTorch
numbering (its help: "0 for ours, 1 for Shaw et al, 2 for Vaswani et al, 3 for Al Rfou et al").
A record says everything that differs between the variants: the attention sub-layer of every
block, the weights the variant adds to the position-free model, how positions reach the
attention (what the model feeds it), the FLOPs of that position handling and the names the
ablation and `--help` show. The config validates against it, the model and its blocks are built
from it, and the ablation, `txl_tf/model/flops.py` and the benchmark read it; a new variant is one
more record (and its layer file, when it needs a new layer): `register_attention_variant` adds a
record made outside this module, and no other library file changes.

Size glossary: B batch, Q segment length, M memory length, K = M + Q, D d_model, N heads,
H head size, L layers, T rows of a learned table (`max_klen`).

TensorFlow-free: the config and the runners' flags read it before TensorFlow loads.
"""
import dataclasses
from typing import Dict, Tuple

# Shape letters of `AttentionVariant.weights` -> the config field that sizes them.
_SHAPE_FIELDS = {"D": "d_model", "N": "n_head", "H": "d_head", "T": "max_klen", "L": "n_layer"}


@dataclasses.dataclass(frozen=True)
class AttentionVariant:
    """One position encoding: what the model builds and feeds its blocks for it.

    Exactly the mechanisms marked True are built; each is one code path of `TransformerXL`:
      relative_sinusoids: the model computes the sinusoids of the distances K-1 .. 0 (clamped by
        clamp_len, with dropout) and holds the u/v biases (`r_w_bias`, `r_r_bias`, per layer with
        untie_r); every attention projects the sinusoids with its `r` and scores queries
        against them (the paper's terms (b) and (d)).
      learned_relative: every attention holds its own learned relative tables of T rows and its
        own u (`LearnedRelativeMultiHeadAttention`: `r_emb`, `r_bias`, `r_w_bias`) and scores
        queries against them; the model feeds it clamp_len.
      input_sinusoids: the model adds absolute sinusoids of the positions K-1 .. 0 (clamped by
        clamp_len) to the segment's word embeddings and to the layer-0 memory where it is read.
      layer_embeddings: the model holds one learned absolute table of T rows per layer
        (`LearnedPositionEmbedding` `pos_emb_{i}`) and adds it to that layer's input and memory.

    Attributes:
      attn_type: The value of `TransformerXLConfig.attn_type` (the reference's numbering).
      name: Short name: the prefix of the ablation's variant names.
      encoding: The paper's name of the encoding (Table 6).
      summary: One line for `--help` and the docs.
      attention: Registered Keras name ("package>ClassName") of the attention sub-layer every
        block builds (`TransformerXLBlock` looks it up; the name only, so this module needs no
        TensorFlow). Every attention layer takes the call signature of
        `RelativeMultiHeadAttention` and reads what its mechanisms need from it.
      relative_sinusoids, learned_relative, input_sinusoids, layer_embeddings: see above.
      weights: (path under the model, shape in the glossary's letters) of every weight the
        variant adds to the position-free model; `{i}` stands for each layer 0 .. L-1 and `L*`
        for L with untie_r (left out without).
    """

    attn_type: int
    name: str
    encoding: str
    summary: str
    attention: str
    relative_sinusoids: bool = False
    learned_relative: bool = False
    input_sinusoids: bool = False
    layer_embeddings: bool = False
    weights: Tuple[Tuple[str, str], ...] = ()

    @property
    def position_scores(self) -> bool:
        """Whether its attention scores queries against positions (not only against keys)."""
        return self.relative_sinusoids or self.learned_relative

    @property
    def learned_tables(self) -> bool:
        """Whether its weights include learned position tables of max_klen rows."""
        return self.learned_relative or self.layer_embeddings

    @property
    def absolute_positions(self) -> bool:
        """Whether positions count back from the newest key of a call (the absolute encodings):
        a token is read differently when more tokens follow it in its segment."""
        return self.input_sinusoids or self.layer_embeddings

    def attention_options(self, config) -> Dict[str, object]:
        """The constructor arguments the block passes to the `attention` layer beyond the
        common ones (d_model, n_head, d_head, dropout, dropatt, pre_lnorm, layer_norm_epsilon,
        kernel_initializer).

        Args:
          config: a `TransformerXLConfig` of this variant.

        Returns:
          {"max_klen": T} with `learned_relative`, else {"relative": `position_scores`}.
        """
        if self.learned_relative:
            return {"max_klen": config.max_klen}
        return {"relative": self.position_scores}

    def configure(self, config, **changes):
        """`config` with this encoding (and `changes`): max_klen back at its default
        (tgt_len + mem_len for learned tables), untie_r kept only where the model holds u/v
        biases (`relative_sinusoids`).

        Args:
          config: any `TransformerXLConfig`.
          changes: other fields to change, e.g. mem_len.

        Returns:
          A new, validated `TransformerXLConfig`.
        """
        untie_r = config.untie_r and self.relative_sinusoids
        return config.replace(**{"attn_type": self.attn_type, "max_klen": None,
                                 "untie_r": untie_r, **changes})

    def weight_shapes(self, config) -> Dict[str, Tuple[int, ...]]:
        """{path under the model: shape} of the weights this variant adds, for `config`.

        Args:
          config: a `TransformerXLConfig` of this variant.

        Returns:
          e.g. {"r_w_bias": (N, H), "layer_0/rel_attn/r": (D, N, H), ...}.

        Example:
          >>> attention_variant(3).weight_shapes(TransformerXLConfig(
          ...     n_token=10, n_layer=1, d_model=8, tgt_len=4, mem_len=4, attn_type=3))
          {'pos_emb_0/embeddings': (8, 8)}
        """
        sizes = {letter: getattr(config, field) for letter, field in _SHAPE_FIELDS.items()}
        shapes = {}
        for path, letters in self.weights:
            shape = tuple(sizes[letter.rstrip("*")] for letter in letters.split()
                          if letter != "L*" or config.untie_r)
            for i in range(config.n_layer) if "{i}" in path else [None]:
                shapes[path.format(i=i)] = shape
        return shapes

    def position_flops(self, config, q: int, m: int) -> Tuple[float, float]:
        """Forward FLOPs of its position handling in one layer (see `txl_tf/model/flops.py`).

        Args:
          config: a `TransformerXLConfig` of this variant.
          q, m: segment and memory length (K = m + q keys).

        Returns:
          (the position scores of one row of the batch, 2 Q K N H with position scores else 0;
          the projection of the encodings, 2 K D N H once per batch for the shared sinusoids,
          else 0). Additions of absolute positions are element-wise and not counted.
        """
        k, nh = m + q, config.n_head * config.d_head
        scores = 2.0 * q * k * nh if self.position_scores else 0.0
        projection = 2.0 * k * config.d_model * nh if self.relative_sinusoids else 0.0
        return scores, projection


OURS = AttentionVariant(
    attn_type=0, name="ours", encoding="ours",
    summary="Transformer-XL (relative sinusoids with u/v biases)",
    attention="txl_tf>RelativeMultiHeadAttention", relative_sinusoids=True,
    weights=(("r_w_bias", "L* N H"), ("r_r_bias", "L* N H"), ("layer_{i}/rel_attn/r", "D N H")))
SHAW = AttentionVariant(
    attn_type=1, name="shaw", encoding="Shaw et al.",
    summary="Shaw et al. (learned relative embeddings and biases per layer)",
    attention="txl_tf>LearnedRelativeMultiHeadAttention", learned_relative=True,
    weights=(("layer_{i}/rel_attn/r_emb", "T N H"), ("layer_{i}/rel_attn/r_bias", "T N"),
             ("layer_{i}/rel_attn/r_w_bias", "N H")))
VASWANI = AttentionVariant(
    attn_type=2, name="vaswani", encoding="Vaswani et al.",
    summary="vanilla Transformer (absolute sinusoids of positions counted back from the newest "
            "key, clipped by clamp_len, added to the input and the layer-0 memory)",
    attention="txl_tf>RelativeMultiHeadAttention", input_sinusoids=True)
ALRFOU = AttentionVariant(
    attn_type=3, name="alrfou", encoding="Al-Rfou et al.",
    summary="Al-Rfou et al. (learned absolute embeddings added to every layer's input)",
    attention="txl_tf>RelativeMultiHeadAttention", layer_embeddings=True,
    weights=(("pos_emb_{i}/embeddings", "T D"),))
ATTENTION_VARIANTS = (OURS, SHAW, VASWANI, ALRFOU)  # the paper's (Table 6), in its order

_BY_ATTN_TYPE = {variant.attn_type: variant for variant in ATTENTION_VARIANTS}


def attention_variants() -> Tuple[AttentionVariant, ...]:
    """Every registered record, by attn_type: the paper's four and any registered later."""
    return tuple(_BY_ATTN_TYPE[attn_type] for attn_type in sorted(_BY_ATTN_TYPE))


def attention_variant(attn_type: int) -> AttentionVariant:
    """The record of `attn_type`.

    Raises:
      KeyError: no variant has this attn_type (`TransformerXLConfig` rejects it first).
    """
    return _BY_ATTN_TYPE[attn_type]


def register_attention_variant(variant: AttentionVariant) -> AttentionVariant:
    """Adds `variant` so that `TransformerXLConfig(attn_type=variant.attn_type)` builds it.

    Its `attention` layer must be registered with Keras
    (`keras.saving.register_keras_serializable`) before a model is built.

    Args:
      variant: a record whose attn_type and name no registered record has.

    Returns:
      `variant`.

    Raises:
      ValueError: its attn_type or name is taken.
    """
    for known in _BY_ATTN_TYPE.values():
        if variant.attn_type == known.attn_type or variant.name == known.name:
            raise ValueError(f"attention variant {variant.name!r} (attn_type="
                             f"{variant.attn_type}) clashes with {known.name!r} (attn_type="
                             f"{known.attn_type}); give it an unused attn_type and name.")
    _BY_ATTN_TYPE[variant.attn_type] = variant
    return variant


def unregister_attention_variant(attn_type: int) -> None:
    """Removes a variant added by `register_attention_variant` (the paper's four stay).

    Raises:
      ValueError: attn_type is one of the paper's or not registered.
    """
    if attn_type not in _BY_ATTN_TYPE or any(v.attn_type == attn_type
                                             for v in ATTENTION_VARIANTS):
        raise ValueError(f"attn_type={attn_type!r} is not a registered added variant.")
    del _BY_ATTN_TYPE[attn_type]


def attn_type_help() -> str:
    """'0 Transformer-XL (...), 1 Shaw et al. (...), ...': every variant for `--help`."""
    return ", ".join(f"{v.attn_type} {v.summary}" for v in attention_variants()) + "."
