"""Training machinery: `train` (one run, built step by step), the step loop (`Trainer`), the
outer loop with its periodic actions (`Controller`, `txl_tf/training/actions.py`), optimizer and
learning-rate schedule, checkpoints, distribution strategies and summaries.

Example:
  >>> import tf_records, txl_tf
  >>> from txl_tf.training import TrainOptions, train
  >>> data = tf_records.PreparedData("data/builtin")
  >>> summary = train(TrainOptions(model_dir="runs/tiny", train_steps=100),
  ...                 lambda vocab_size, cutoffs: txl_tf.TransformerXLConfig(
  ...                     n_token=vocab_size, cutoffs=cutoffs, n_layer=2, d_model=64, n_head=2,
  ...                     d_head=32, d_inner=128, tgt_len=32, mem_len=32),
  ...                 data)
"""
from txl_tf.training.data_source import DataSource
from txl_tf.training.options import PRECISIONS, TrainError, TrainOptions
from txl_tf.training.run import train

__all__ = ["DataSource", "PRECISIONS", "TrainError", "TrainOptions", "train"]
