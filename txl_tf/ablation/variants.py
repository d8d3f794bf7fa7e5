"""The variants of the paper's ablation (Dai et al. 2019, Table 6): encoding x recurrence x loss.

Table 6 (WikiText-103, 128M parameters, backpropagation length 128) lists nine rows, and this
table holds them in its order: Transformer-XL's encoding ("ours", attn_type 0) with recurrence
and full loss, Shaw et al. (attn_type 1) with recurrence and full loss, ours with recurrence
and half loss; without recurrence: ours full, ours half, Shaw full, Shaw half, Vaswani et al.
(attn_type 2) half, and Al-Rfou et al. (attn_type 3) half (the "Transformer (128M)" row). The
paper has no absolute encoding with recurrence; `vaswani-rec-half` is added (`in_paper` False)
because it shows the temporal confusion of section 3.3 that the relative encodings avoid.

Same parameter budget: every variant takes the same n_layer, d_model, n_head, d_head, d_inner,
vocabulary and tgt_len from one base configuration and changes only `attn_type`, `mem_len`
(the base mem_len with recurrence, 0 without) and the loss. The encodings own different
position parameters (attn_type 0: u, v and the position projection of every layer; 1: learned
relative tables and biases of max_klen = tgt_len + mem_len rows per layer; 2: none; 3: learned
absolute tables of max_klen rows per layer), so the counts differ a little; the experiment
reports each count.
"""
import dataclasses
from typing import Optional, Sequence, Tuple

from txl_tf.config import (ATTN_TYPE_LEARNED_ABSOLUTE, ATTN_TYPE_LEARNED_RELATIVE,
                           ATTN_TYPE_RELATIVE, ATTN_TYPE_VANILLA, TransformerXLConfig)

ENCODINGS = {ATTN_TYPE_RELATIVE: "ours", ATTN_TYPE_LEARNED_RELATIVE: "Shaw et al.",
             ATTN_TYPE_VANILLA: "Vaswani et al.", ATTN_TYPE_LEARNED_ABSOLUTE: "Al-Rfou et al."}


class VariantError(ValueError):
    """An unknown variant name or a base configuration a variant cannot be made from."""


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row of the ablation.

    Attributes:
      name: Directory name of its model under the experiment root.
      attn_type: Position encoding (`TransformerXLConfig.attn_type`).
      recurrence: Trained and evaluated with memory (mem_len of the base configuration).
      half_loss: Trained with the paper's half loss (`TrainOptions.half_loss`).
      in_paper: A row of the paper's Table 6.
      paper: The paper's (PPL init, PPL best, Attn Len) of the row on WikiText-103, or None.
    """

    name: str
    attn_type: int
    recurrence: bool
    half_loss: bool
    in_paper: bool = True
    paper: Optional[Tuple[float, float, int]] = None

    @property
    def encoding(self) -> str:
        return ENCODINGS[self.attn_type]

    @property
    def loss(self) -> str:
        return "half" if self.half_loss else "full"


VARIANTS = (
    Variant("ours-rec-full", 0, True, False, paper=(27.02, 26.77, 500)),
    Variant("shaw-rec-full", 1, True, False, paper=(27.94, 27.94, 256)),
    Variant("ours-rec-half", 0, True, True, paper=(28.69, 28.33, 460)),
    Variant("ours-norec-full", 0, False, False, paper=(29.59, 29.02, 260)),
    Variant("ours-norec-half", 0, False, True, paper=(30.10, 30.10, 120)),
    Variant("shaw-norec-full", 1, False, False, paper=(29.75, 29.75, 120)),
    Variant("shaw-norec-half", 1, False, True, paper=(30.50, 30.50, 120)),
    Variant("vaswani-norec-half", 2, False, True, paper=(30.97, 30.97, 120)),
    Variant("alrfou-norec-half", 3, False, True, paper=(31.16, 31.16, 120)),
    Variant("vaswani-rec-half", 2, True, True, in_paper=False),
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

    max_klen is reset to its default (tgt_len + mem_len of the variant); untie_r, which only
    attn_type 0 has, is off for the other encodings.

    Raises:
      VariantError: a variant with recurrence from a base configuration without memory.
    """
    if variant.recurrence and base.mem_len < 1:
        raise VariantError(f"variant {variant.name} trains with memory: give --mem_len >= 1 "
                           f"(the base configuration has mem_len={base.mem_len}).")
    untie_r = base.untie_r and variant.attn_type == ATTN_TYPE_RELATIVE
    return base.replace(attn_type=variant.attn_type, max_klen=None, untie_r=untie_r,
                        mem_len=base.mem_len if variant.recurrence else 0)
