"""`AblationOptions`: the ablation experiment's own options (`run_ablation` in
`txl_tf/commands/ablation.py`; the training ones are a `TrainOptions`). TensorFlow-free,
so that runners/ablation.py's `--help` and usage errors do not wait for it.
"""
import dataclasses

from txl_tf.ablation.variants import DEFAULT_VARIANTS
from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range


@dataclasses.dataclass
class AblationOptions:
    """The experiment's own options (the training ones are a `TrainOptions`).

    Attributes:
      root: Experiment directory: the model of each variant in root/<variant>.
      variants: Variants to train and evaluate, in order ('all': every row of
        txl_tf/ablation/variants.py).
      eval_multiples: Evaluation attention lengths, as multiples of each variant's training
        attention length (tgt_len + mem_len with recurrence, tgt_len without).
      split: Split the variants are evaluated on.
      eval_rows: The split is cut into this many contiguous rows, read in parallel.
      max_eval_tokens: Evaluate only the first this many tokens of the split (0: all of it).
    """
    root: str = "runs/ablation"
    variants: tuple = DEFAULT_VARIANTS
    eval_multiples: tuple = (1, 2, 4)
    split: str = "valid"
    eval_rows: int = 16
    max_eval_tokens: int = 0

    # The declared range of every number (txl_tf/runtime/ranges.py); eval_multiples: each.
    RANGES = {
        "eval_multiples": Range(1, 2**20, "multiples of the training attention length"),
        "eval_rows": Range(1, INT32_MAX, "rows"),
        "max_eval_tokens": Range(0, INT32_MAX, "0: all"),
    }
