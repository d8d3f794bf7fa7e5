"""Training machinery: `train` (one run, built step by step), the step loop (`Trainer`), the
outer loop with its periodic actions (`Controller`, `txl_tf/training/actions.py`), optimizer and
learning-rate schedule, checkpoints, distribution strategies and summaries.

The names are loaded on first use (see `txl_tf/__init__.py`): `TrainOptions` and `TrainError`
come without TensorFlow, `train` and `DataSource` import it.

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
from txl_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "DataSource": "txl_tf.training.data_source",
    "PRECISIONS": "txl_tf.training.options",
    "TrainError": "txl_tf.training.options",
    "TrainOptions": "txl_tf.training.options",
    "train": "txl_tf.training.run",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
