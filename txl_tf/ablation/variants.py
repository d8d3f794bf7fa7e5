"""The variants of the paper's ablation (Dai et al. 2019, Table 6): encoding x recurrence x loss.

Table 6 (WikiText-103, 128M parameters, backpropagation length 128) lists nine rows, and this
table holds them in its order: Transformer-XL's encoding ("ours") with recurrence and full
loss, Shaw et al. with recurrence and full loss, ours with recurrence and half loss; without
recurrence: ours full, ours half, Shaw full, Shaw half, Vaswani et al. half, and Al-Rfou et al.
half (the "Transformer (128M)" row). The encodings are the records of
`txl_tf/model/attention_variants.py`. The paper has no absolute encoding with recurrence;
`vaswani-rec-half` is added (`in_paper` False) because it shows the temporal confusion of
section 3.3 that the relative encodings avoid.

Same parameter budget: every variant takes the same n_layer, d_model, n_head, d_head, d_inner,
vocabulary and tgt_len from one base configuration and changes only the encoding, `mem_len`
(the base mem_len with recurrence, 0 without) and the loss. The encodings own different
position parameters (`AttentionVariant.weights`; the learned tables have max_klen = tgt_len +
mem_len rows), so the counts differ a little; the experiment reports each count.
"""
import dataclasses
from typing import Optional, Sequence, Tuple

from txl_tf.model.attention_variants import ALRFOU, OURS, SHAW, VASWANI, AttentionVariant
from txl_tf.model.config import TransformerXLConfig


class VariantError(ValueError):
    """An unknown variant name or a base configuration a variant cannot be made from."""


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row of the ablation.

    Attributes:
      attention: Position encoding (a record of `txl_tf/model/attention_variants.py`).
      recurrence: Trained and evaluated with memory (mem_len of the base configuration).
      half_loss: Trained with the paper's half loss (`TrainOptions.half_loss`).
      in_paper: A row of the paper's Table 6.
      paper: The paper's (PPL init, PPL best, Attn Len) of the row on WikiText-103, or None.
    """

    attention: AttentionVariant
    recurrence: bool
    half_loss: bool
    in_paper: bool = True
    paper: Optional[Tuple[float, float, int]] = None

    @property
    def name(self) -> str:
        """Directory name of its model under the experiment root, e.g. `shaw-norec-half`."""
        return f"{self.attention.name}-{'rec' if self.recurrence else 'norec'}-{self.loss}"

    @property
    def attn_type(self) -> int:
        return self.attention.attn_type

    @property
    def encoding(self) -> str:
        return self.attention.encoding

    @property
    def loss(self) -> str:
        return "half" if self.half_loss else "full"


VARIANTS = (
    Variant(OURS, True, False, paper=(27.02, 26.77, 500)),
    Variant(SHAW, True, False, paper=(27.94, 27.94, 256)),
    Variant(OURS, True, True, paper=(28.69, 28.33, 460)),
    Variant(OURS, False, False, paper=(29.59, 29.02, 260)),
    Variant(OURS, False, True, paper=(30.10, 30.10, 120)),
    Variant(SHAW, False, False, paper=(29.75, 29.75, 120)),
    Variant(SHAW, False, True, paper=(30.50, 30.50, 120)),
    Variant(VASWANI, False, True, paper=(30.97, 30.97, 120)),
    Variant(ALRFOU, False, True, paper=(31.16, 31.16, 120)),
    Variant(VASWANI, True, True, in_paper=False),
)

# The experiment's default: both ingredients on, each one off, and the absolute encodings.
DEFAULT_VARIANTS = ("ours-rec-full", "ours-norec-full", "shaw-rec-full", "vaswani-rec-half",
                    "vaswani-norec-half", "alrfou-norec-half")


def select_variants(names: Sequence[str]) -> Tuple[Variant, ...]:
    """The variants of `names` in the given order (`all`: every one of `VARIANTS`).

    Raises:
      VariantError: an unknown or repeated name, or none.
    """
    if list(names) == ["all"]:
        return VARIANTS
    by_name = {v.name: v for v in VARIANTS}
    unknown = [n for n in names if n not in by_name]
    if unknown or not names or len(set(names)) != len(names):
        raise VariantError(f"--variants must be distinct names among {', '.join(by_name)} (or "
                           f"'all'), got {','.join(names) or 'none'}.")
    return tuple(by_name[n] for n in names)


def variant_config(base: TransformerXLConfig, variant: Variant) -> TransformerXLConfig:
    """`base` with the variant's encoding and memory; everything else (sizes) unchanged.

    The encoding as `AttentionVariant.configure` sets it (max_klen at its default, untie_r
    only where the model holds u/v biases).

    Raises:
      VariantError: a variant with recurrence from a base configuration without memory.
    """
    if variant.recurrence and base.mem_len < 1:
        raise VariantError(f"variant {variant.name} trains with memory: give --mem_len >= 1 "
                           f"(the base configuration has mem_len={base.mem_len}).")
    return variant.attention.configure(base, mem_len=base.mem_len if variant.recurrence else 0)
