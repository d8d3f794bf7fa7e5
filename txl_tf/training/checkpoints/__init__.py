"""Training checkpoints of a txl-tf model directory, with the per-worker memory beside them.

Layout of `model_dir` (written by `TrainCheckpoints`):
  config.json                     the model configuration (`txl_tf.save_config`)
  checkpoint, ckpt-<step>.*       `tf.train.CheckpointManager`: the last `max_to_keep` training
                                  checkpoints, root `tf.train.Checkpoint(model=, optimizer=,
                                  step=, loss_scale=, good_steps=, dropout_rng=)`;
                                  `txl_tf.load_model` reads the model part.
  memory/worker-<w>/step-<step>/  the memory of worker w's local replicas after step <step>: a TF
                                  checkpoint of L variables [per_host_batch, M, D] (`layer_0`...),
                                  replicas concatenated in replica order.
  best/                           the best checkpoint on validation so far, a complete model
                                  directory (`best_checkpoint.py`).
  damaged/ckpt-<step>/            the files (and memory-worker-<w>/) of a checkpoint newer than
                                  the one resumed from that could not be read, moved aside;
                                  damaged/checkpoint: a state file that could not be parsed.
  schedule.json                   the learning-rate flags of the run that writes the checkpoints.

One concept per module:
  saving.py            a checkpoint with every worker's memory, and the leftovers of
                       interrupted saves deleted;
  recovery.py          the newest checkpoint that reads whole, restored;
  damaged.py           the newer damaged ones moved aside, the state file read and rebuilt;
  worker_memory.py     each worker's memory files, and its gathering across workers;
  best_checkpoint.py   model_dir/best/;
  errors.py            the errors and the one-line message of a failed save;
  train_checkpoints.py `TrainCheckpoints`, the composition a training run uses.

Atomicity and pairing: the chief gathers the memory of every replica of every worker (one
collective per layer, `worker_memory.gather_worker_memory`), writes each worker's part into a
temporary directory that is renamed to `step-<step>` (a rename is atomic on a local or POSIX
file system), then writes ckpt-<step>, whose `checkpoint` state file is switched last by the
manager. A run killed at any moment thus leaves either the previous pair or the new one: on
restart `restore()` reads the newest training checkpoint whose files and memory read whole
(memory written for a step whose checkpoint never landed is ignored and later overwritten; the
memory of a step is deleted only once its checkpoint left the manager's list).
Only the chief writes into model_dir (ckpt-*, memory/, best/, summaries); the other workers join
the checkpoint's collectives but save into a temporary directory outside it, as tf.distribute
recommends, and only read model_dir (config.json, the checkpoint and their memory on restore).
The stream position needs no file: every stream advances one segment per step, so the position
is the step itself (`tf_records.make_input_fn(..., start_step=step)`).
"""
from txl_tf.training.checkpoints.best_checkpoint import BestCheckpoint
from txl_tf.training.checkpoints.errors import CheckpointError, CheckpointIOError
from txl_tf.training.checkpoints.saving import dropout_rng_state
from txl_tf.training.checkpoints.train_checkpoints import TrainCheckpoints

__all__ = ["BestCheckpoint", "CheckpointError", "CheckpointIOError",
           "TrainCheckpoints", "dropout_rng_state"]
