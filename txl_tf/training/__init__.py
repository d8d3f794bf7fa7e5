"""Training machinery: the step loop (`Trainer`) around one replica's step (`ReplicaStep`, which
`TransformerXLCausalLM.fit` runs too), the outer loop with its periodic actions
(`Controller`, `txl_tf/training/actions/`), optimizer and learning-rate schedule,
checkpoints, distribution strategies and `DataSource` (what a run needs of the data), and the
parts a run is assembled from: `placement` (strategy, replicas, the batch per replica),
`training_run` (`TrainingRun`: the parts handed from step to step), `run_record/` (model_dir's
record, resume checks, warm start, the starting point), `measurement/` (pace, duration, matmul
peak, device memory, profiles) and `reporting/` (TensorBoard, the heartbeat), and the
run's opening lines (`announce`) and closing summary (`train_summary`: train_summary.json and its
verdict). The run itself, `train`, is a command that
assembles them: `txl_tf/commands/train.py`.

The names are loaded on first use (see `txl_tf/__init__.py`): `DataSource` imports TensorFlow.
"""
from txl_tf.runtime.lazy_exports import lazy_exports

_EXPORTS = {
    "DataSource": "txl_tf.training.data_source",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
