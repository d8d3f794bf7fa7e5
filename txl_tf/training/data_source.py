"""`DataSource`: what `txl_tf.commands.train.train` needs of a prepared data directory.

`txl_tf` never imports the data package; `train` receives any object with these members
(`tf_records.PreparedData` is the one of this project). The record layout (`layout`) is opaque
here: training only passes it back to `ensure_records` and `input_fn`.
"""
from typing import Any, Callable, Dict, Optional, Protocol, Tuple

import tensorflow as tf


class DataSource(Protocol):
    """A prepared data directory, as training uses it.

    Attributes:
      data_dir: the directory (shown in messages, recorded in the model directory).
      dataset: the corpus name (`builtin`, `enwik8`, ...).
      corpus_options: the corpus options the records are made with.
      level: `char`, `byte` or `word` (bpc or perplexity); valid after `ensure_records`.
      vocab_size: V; valid after `ensure_records`.
      cutoffs: the corpus' adaptive-softmax cutoffs (may be empty); valid after
        `ensure_records`.
      info: the corpus description (corpus-info.json: `num_tokens` and `unk_tokens` per
        split, `vocab_size`, `level`, ...), or None; the verdict reads the corpus' size in it.
    """
    data_dir: str
    dataset: str
    corpus_options: dict
    level: str
    vocab_size: int
    cutoffs: Tuple[int, ...]
    info: Optional[dict]

    def layout(self, tgt_len: int, per_replica_batch: int, replicas_per_host: int = 1,
               hosts: int = 1, num_passes: int = 1) -> Any:
        """The record layout of segments of `tgt_len` tokens for that many streams."""

    def ensure_records(self, layouts: Dict[str, Any], may_prepare: bool = True,
                       wait_seconds: float = 0.0) -> dict:
        """Find (or, with `may_prepare`, make) the records of each split's layout; without
        `may_prepare` wait up to `wait_seconds` for another process to write them. Returns the
        records' metadata per split; raises one-line errors naming the fix."""

    def input_fn(self, split: str, layout: Any, repeat: bool = False, start_step: int = 0,
                 verify: str = "checksum"
                 ) -> Callable[[tf.distribute.InputContext], tf.data.Dataset]:
        """The per-host dataset function for `strategy.distribute_datasets_from_function`:
        batches {"inputs", "labels"} int32 [B, Q] of this host's streams, from segment
        `start_step` on."""

    def unigram_entropy(self, split: str = "train") -> Optional[float]:
        """Entropy (nats/token) of the unigram distribution of `split`, or None."""

    def copy_to(self, model_dir: str) -> None:
        """Write the vocabulary and corpus description into `model_dir` (atomically)."""
