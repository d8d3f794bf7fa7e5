"""`TrainCheckpoints`: the checkpoints of one training run, composed of their parts."""
from typing import List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from txl_tf.training.checkpoints.best_checkpoint import BestCheckpoint
from txl_tf.training.checkpoints.recovery import CheckpointRecovery
from txl_tf.training.checkpoints.saving import CheckpointSaver, ckpt_prefix


class TrainCheckpoints:
    """Saving and restoring training state in `model_dir`, and its best/ directory.

    Checkpoints are never lost: `restore` reads the newest checkpoint that can be read whole
    (weights, and the memory of every worker when it was saved) and moves the newer, damaged
    ones with their memory into `model_dir/damaged/ckpt-N/` (printing which and why), so that
    no later save writes over them; a `checkpoint` state file that cannot be parsed is moved
    there too and rebuilt from the `ckpt-N.index` files found. `save` first deletes what an
    interrupted save left behind, and a save that fails (disk full...) deletes its own partial
    files and raises a one-line `CheckpointIOError`, the previous checkpoint intact.

    Args:
      model_dir: the run directory.
      trackables: the objects of the root checkpoint; must hold `model` (and usually
        `optimizer`, `step`, ...). Created under the strategy's scope.
      max_to_keep: training checkpoints (and memory states) kept.
      worker: this process's worker index; is_chief: whether it writes ckpt-*/best/.

    Attributes:
      checkpoint: the root `tf.train.Checkpoint`.
      best: the run's `BestCheckpoint` (model_dir/best/), kept by `actions.KeepBest`.
      restored_path: the prefix of the checkpoint `restore` read, or None.
    """

    def __init__(self, model_dir: str, trackables: dict, max_to_keep: int = 5, worker: int = 0,
                 is_chief: bool = True):
        if "model" not in trackables:
            raise ValueError("the training checkpoint must hold the model under 'model'.")
        self.model_dir = model_dir
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self.saver = CheckpointSaver(model_dir, self.checkpoint, max_to_keep, is_chief)
        self.recovery = CheckpointRecovery(model_dir, self.checkpoint, worker, is_chief)
        self.best = BestCheckpoint(model_dir, trackables["model"], is_chief)
        self.restored_path: Optional[str] = None

    def save(self, step: int, memories: Sequence[Sequence[np.ndarray]]) -> Optional[str]:
        """The training checkpoint of `step` with every worker's memory (`CheckpointSaver.save`);
        its path on the chief, None elsewhere."""
        return self.saver.save(step, memories)

    def restore(self) -> Tuple[Optional[int], Optional[List[np.ndarray]]]:
        """Restore the newest readable training checkpoint (`CheckpointRecovery.restore`).

        Returns:
          (step, this worker's memory arrays or None); (None, None) when there is no checkpoint.
        """
        restored = self.recovery.restore()
        if restored.state_rewritten:
            self.saver.reload()
        if restored.step is not None:
            self.restored_path = ckpt_prefix(self.model_dir, restored.step)
        return restored.step, restored.memory
