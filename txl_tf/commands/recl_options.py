"""`ReclOptions`: a RECL measurement of runners/recl.py (`measure_recl` in
`txl_tf/commands/recl.py`). TensorFlow-free, so that recl.py's `--help` and usage errors
do not wait for it.
"""
import dataclasses
from typing import Optional

from txl_tf.inference.relative_effective_context import RECL_THRESHOLD
from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range


@dataclasses.dataclass
class ReclOptions:
    """A RECL measurement of a model group (`python runners/recl.py`).

    Attributes:
      model_dirs: Model directories of the group, compared with each other (names: their last
        path components).
      data_dir: Prepared data directory holding the split (default: the data the first model
        was trained on, recorded in its corpus-info.json; needed when that records none or the
        directory is no longer there).
      split: Split whose tokens are scored.
      context_lengths: The grid c_0, c_0 + Delta, ... of context lengths, evenly spaced.
      num_tokens: Scored tokens: the first ones of the split with max(c) tokens before them.
      threshold: Relative gain below which the search stops (0.01 in the paper).
      batch_tokens: Window positions per model call (memory against speed).
    """

    model_dirs: tuple = ()
    data_dir: Optional[str] = None
    split: str = "valid"
    context_lengths: tuple = (16, 32, 48, 64, 80, 96, 112, 128)
    num_tokens: int = 2000
    threshold: float = RECL_THRESHOLD
    batch_tokens: int = 8192

    # The declared range of every number (txl_tf/runtime/ranges.py); context_lengths: each.
    RANGES = {
        "context_lengths": Range(1, INT32_MAX, "tokens"),
        "num_tokens": Range(1, INT32_MAX, "scored tokens"),
        "threshold": Range(0.0, 1.0, "a relative gain; the paper: 0.01", open_low=True,
                           open_high=True, integer=False),
        "batch_tokens": Range(1, INT32_MAX, "window positions per call"),
    }
