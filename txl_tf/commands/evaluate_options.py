"""`EvalOptions`: what runners/evaluate.py evaluates and how (`evaluate_model` in
`txl_tf/commands/evaluate.py`). TensorFlow-free, so that evaluate.py's `--help`
and usage errors do not wait for it.
"""
import dataclasses
from typing import Optional

from txl_tf.model.config import INT32_MAX
from txl_tf.runtime.ranges import Range


SPLITS = ("train", "valid", "test")
LAST_SEGMENTS = ("drop", "pad")


@dataclasses.dataclass
class EvalOptions:
    """What to evaluate and how (the flags of runners/evaluate.py).

    Attributes:
      model_dir: Model directory (config.json + checkpoints).
      checkpoint: Which checkpoint of --model_dir: latest (the newest), best (MODEL_DIR/best/,
        the best on validation), ckpt-N, or a checkpoint path prefix.
      split: Split of --data_dir.
      data_dir: Prepared data directory (default: the one the model was trained on, recorded
        in MODEL_DIR/corpus-info.json). Records for the evaluation layout (--tgt_len,
        --batch_size, --last_segment) are made from its cached token streams when missing.
      text_file: Evaluate this text file (UTF-8, or raw bytes for byte-level models) with the
        model's vocabulary instead of --data_dir.
      vocab_file: Vocabulary for --text_file (default MODEL_DIR/vocab.txt; corpus-info.json
        must sit beside it).
      tgt_len: Evaluation segment length (default: the model's).
      mem_len: Evaluation memory length (default: the model's).
      clamp_len: Clamp relative distances (default: the model's).
      same_length: Same attention length for every query (default: the model's).
      batch_size: Number of parallel contiguous streams.
      last_segment: drop: score whole segments only (reference); pad: also score each
        stream's last partial segment, so every token with a predecessor is scored.
      max_steps: Stop after this many segments (for a quick look).
      tb_dir: TensorBoard directory (default MODEL_DIR/eval-SPLIT, or MODEL_DIR/eval-text for
        --text_file); '' to disable.
      progress: Show a progress bar on stderr.
      mem_lens: Evaluate at each of these memory lengths in one run (e.g. 0,64,256,1024): the
        context curve. One line per length on stderr, the JSON result gains "curve", and
        TensorBoard gets eval/loss_by_mem_len with x = the memory length. Replaces --mem_len.
    """
    model_dir: Optional[str] = None
    # txl_tf.storage.model_files.LATEST, written out: this module stays TensorFlow-free
    checkpoint: str = "latest"
    split: str = "test"
    data_dir: Optional[str] = None
    text_file: Optional[str] = None
    vocab_file: Optional[str] = None
    tgt_len: Optional[int] = None
    mem_len: Optional[int] = None
    clamp_len: Optional[int] = None
    same_length: Optional[bool] = None
    batch_size: int = 10
    last_segment: str = "drop"
    max_steps: Optional[int] = None
    tb_dir: Optional[str] = None
    progress: bool = True
    mem_lens: tuple = ()

    # The declared range of every number (txl_tf/runtime/ranges.py); `mem_lens`: each entry.
    RANGES = {
        "tgt_len": Range(1, INT32_MAX, "tokens"),
        "mem_len": Range(0, INT32_MAX, "0: no memory"),
        "clamp_len": Range(0, INT32_MAX, "-1: none", also=(-1,)),
        "batch_size": Range(1, 2**20, "streams"),
        "max_steps": Range(1, INT32_MAX, "segments"),
        "mem_lens": Range(0, INT32_MAX, "memory lengths"),
    }


class EvalInputError(ValueError):
    """Bad evaluation input (flags, files, vocabulary)."""
