"""Saving a training checkpoint with every worker's memory beside it, and deleting what an
interrupted save left behind.

Order of a save (chief): each worker's memory into `memory/worker-<w>/step-<step>/` (a
temporary directory renamed into place, `worker_memory.write_memory`), then `ckpt-<step>.*`
through `tf.train.CheckpointManager`, whose `checkpoint` state file is switched last. A run
killed at any moment thus leaves the previous pair or the new one; the memory of a step is
deleted only once its checkpoint left the manager's list.
"""
import os
import shutil
import tempfile
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from txl_tf.storage.checkpoint_probes import checkpoint_files, quiet_tf_warnings
from txl_tf.storage import model_dir_layout as layout
from txl_tf.storage.model_dir_layout import (BEST_DIR, BEST_OLD, BEST_TMP_PREFIX, CHECKPOINT_NAME,
                                             TMP_PREFIX)
from txl_tf.training.checkpoints.errors import save_error
from txl_tf.training.checkpoints.worker_memory import (memory_dir, memory_step_dir,
                                                       memory_workers, prune_memory,
                                                       write_memory)

def ckpt_prefix(directory: str, step: int) -> str:
    """The path prefix of the training checkpoint of `step` in `directory` (`<dir>/ckpt-<step>`)."""
    return layout.checkpoint_prefix(directory, step)


def dropout_rng_state(model) -> tf.train.Checkpoint:
    """The Keras dropout seed-generator states of `model` as a trackable (Keras does not put them
    in `tf.train.Checkpoint(model=model)`), so that a resumed run draws the same dropout masks."""
    states = [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]
    return tf.train.Checkpoint(**{f"state_{i}": v for i, v in enumerate(states)})


def _is_leftover(directory: str, name: str) -> bool:
    """Whether `name` in `directory` is what an interrupted or failed save left behind."""
    sharded = name.startswith(f"{CHECKPOINT_NAME}-") and name.endswith(layout.SHARDED_TEMP_SUFFIX)
    if sharded:  # sharded TF saves
        return True
    if name.startswith((layout.MEMORY_STEP_TMP_PREFIX, BEST_TMP_PREFIX, BEST_OLD,
                         layout.CHECKPOINT_STATE_TEMP)):
        return True
    return name.startswith(TMP_PREFIX) and os.path.isfile(os.path.join(directory, name))


def clean_temporary(model_dir: str) -> List[str]:
    """Delete what interrupted or failed saves left in `model_dir`: `ckpt-N_temp/` (sharded
    TF saves, also in best/), memory `.tmp-step-*` directories, `.tmp-*` files of atomic
    writes and unfinished copies of best/ (an interrupted swap of best/ is undone first).
    Returns the paths deleted."""
    removed = []
    best, old = os.path.join(model_dir, BEST_DIR), os.path.join(model_dir, BEST_OLD)
    if os.path.isdir(old) and not os.path.exists(best):
        os.replace(old, best)  # killed between the two renames of `atomic_directory`
    places = [model_dir, best] + [memory_dir(model_dir, w) for w in memory_workers(model_dir)]
    for directory in filter(os.path.isdir, places):
        for name in os.listdir(directory):
            if not _is_leftover(directory, name):
                continue
            path = os.path.join(directory, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
            removed.append(path)
    return removed


class CheckpointSaver:
    """Writes the training checkpoint of a step with every worker's memory (chief), keeping the
    newest `max_to_keep` of both.

    Args:
      model_dir: the run directory.
      checkpoint: the root `tf.train.Checkpoint` of the run (model, optimizer, step, ...).
      max_to_keep: training checkpoints (and memory states) kept.
      is_chief: whether this process writes into `model_dir`; the other workers take part in
        the checkpoint's collectives but save into a temporary directory outside it.
    """

    def __init__(self, model_dir: str, checkpoint: tf.train.Checkpoint, max_to_keep: int = 5,
                 is_chief: bool = True):
        self.model_dir = model_dir
        self.checkpoint = checkpoint
        self.max_to_keep = max_to_keep
        self.is_chief = is_chief
        self.manager = self._make_manager()

    def _make_manager(self) -> tf.train.CheckpointManager:
        directory = (self.model_dir if self.is_chief
                     else tempfile.mkdtemp(prefix="txl-nonchief-ckpt-"))
        with quiet_tf_warnings():
            return tf.train.CheckpointManager(self.checkpoint, directory,
                                              max_to_keep=self.max_to_keep,
                                              checkpoint_name=CHECKPOINT_NAME)

    def reload(self) -> None:
        """Take over the list of the `checkpoint` state file again (after it was rewritten)."""
        self.manager = self._make_manager()

    def save(self, step: int, memories: Sequence[Sequence[np.ndarray]]) -> Optional[str]:
        """Chief: write every worker's memory (`memories[w]`: worker w's L arrays, from
        `gather_worker_memory`), then the training checkpoint of `step`; returns its path.
        Other workers take part in the checkpoint's collectives but write only into a
        temporary directory, deleted right after (tf.distribute's recipe; a full copy of
        weights and Adam state per save would otherwise pile up in their /tmp).

        Raises:
          CheckpointIOError: the save failed (e.g. "no space left on <model_dir>"); its partial
            files are deleted and the previous checkpoint is intact.
        """
        if not self.is_chief:
            self.manager.save(checkpoint_number=step)
            shutil.rmtree(self.manager.directory, ignore_errors=True)
            return None
        clean_temporary(self.model_dir)
        previous = self.manager.latest_checkpoint
        try:
            for worker, memory in enumerate(memories):
                write_memory(self.model_dir, worker, step, memory)
            path = self.manager.save(checkpoint_number=step)
        except (OSError, tf.errors.OpError) as error:
            self._discard(step)
            raise save_error(error, f"the checkpoint of step {step}", self.model_dir,
                             previous) from None
        kept = [int(p.rsplit("-", 1)[1]) for p in self.manager.checkpoints]
        for worker in memory_workers(self.model_dir):
            prune_memory(self.model_dir, worker, kept)
        return path

    def _discard(self, step: int) -> None:
        """Delete the files of a failed save of `step` (unless the state file already names it)."""
        if self.manager.latest_checkpoint == ckpt_prefix(self.model_dir, step):
            return
        for name in checkpoint_files(self.model_dir).get(step, []):
            os.remove(os.path.join(self.model_dir, name))
        for worker in memory_workers(self.model_dir):
            shutil.rmtree(memory_step_dir(self.model_dir, worker, step),
                          ignore_errors=True)
        clean_temporary(self.model_dir)
