"""Choosing and reading the newest training checkpoint of `model_dir` that reads whole.

Candidates are the `ckpt-<step>` found in the directory and those the `checkpoint` state file
lists, newest first. One is taken when its weights read back (every tensor with its checksum,
checked before any variable is assigned) and the memory of every worker saved with it reads
whole; the newer ones that fail are set aside (`damaged.py`). When every checkpoint with
readable weights has damaged memory, the newest of them is taken with the memory reset to zeros.
"""
import dataclasses
import gc
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from txl_tf.storage.checkpoint_probes import (checkpoint_files, checkpoint_problem, is_damage_error,
                                              quiet_tf_warnings)
from txl_tf.runtime.error_text import first_line
from txl_tf.storage.model_dir_layout import checkpoint_basename, config_path
from txl_tf.training.checkpoints.damaged import read_state, set_aside
from txl_tf.training.checkpoints.errors import CheckpointError, CheckpointIOError
from txl_tf.training.checkpoints.saving import ckpt_prefix, clean_temporary
from txl_tf.training.checkpoints.worker_memory import memory_workers, read_memory
from txl_tf.storage.weight_counts import (ExtraWeightsError, check_no_extra_weights,
                                  checkpoint_model_weights)


@dataclasses.dataclass
class Restored:
    """What `CheckpointRecovery.restore` read.

    Attributes:
      step: the step of the checkpoint restored (None: there was none).
      memory: this worker's memory arrays saved with it (L x [per_host_batch, M, D]), or None.
      state_rewritten: whether the `checkpoint` state file was rebuilt.
    """
    step: Optional[int] = None
    memory: Optional[List[np.ndarray]] = None
    state_rewritten: bool = False


class CheckpointRecovery:
    """Restores the newest readable training checkpoint of `model_dir` into `checkpoint`.

    Args:
      model_dir: the run directory.
      checkpoint: the root `tf.train.Checkpoint` of the run, filled by `restore`.
      worker: this process's worker index (whose memory it reads).
      is_chief: whether it cleans `model_dir` and sets damaged checkpoints aside.
    """

    def __init__(self, model_dir: str, checkpoint: tf.train.Checkpoint, worker: int = 0,
                 is_chief: bool = True):
        self.model_dir = model_dir
        self.checkpoint = checkpoint
        self.worker = worker
        self.is_chief = is_chief

    def restore(self) -> Restored:
        """Restore the newest readable training checkpoint, if any.

        Raises:
          CheckpointError: the checkpoint was written for another model or optimizer.
          CheckpointIOError: checkpoint files exist but none can be read.
        """
        if self.is_chief:
            clean_temporary(self.model_dir)
        files = checkpoint_files(self.model_dir)
        listed, state_problem = read_state(self.model_dir)
        candidates = sorted(set(files) | set(listed), reverse=True)
        if not candidates:
            return Restored()
        step, weights_only, skipped = self._choose(candidates, files)
        self._read_weights(step)
        memory = (None if step == weights_only
                  else read_memory(self.model_dir, self.worker, step))
        rewritten = set_aside(self.model_dir, step, [(n, p) for n, p in skipped if n > step],
                              files, listed, state_problem, self.is_chief)
        if memory is None:
            logging.warning("no memory saved for step %d of worker %d in %s: the memory restarts "
                            "from zeros (the run is not an exact continuation).", step,
                            self.worker, self.model_dir)
        return Restored(step, memory, rewritten)

    def _choose(self, candidates: List[int], files: Dict[int, List[str]]
                ) -> Tuple[int, Optional[int], List[Tuple[int, str]]]:
        """(step to restore, the newest step whose weights read but whose memory did not or
        None, the (step, problem) of the checkpoints skipped), checking files before any
        variable is assigned.

        Raises:
          CheckpointIOError: no candidate has readable weights.
        """
        skipped: List[Tuple[int, str]] = []
        weights_only = None
        for number in candidates:
            problem = (checkpoint_problem(ckpt_prefix(self.model_dir, number))
                       if number in files else
                       "listed in the 'checkpoint' state file but its files are missing")
            if problem is None:
                problem = self._memory_problem(number)
                if problem is None:
                    return number, weights_only, skipped
                weights_only = number if weights_only is None else weights_only
            skipped.append((number, problem))
        if weights_only is None:
            raise CheckpointIOError(
                f"no readable checkpoint in {self.model_dir}: "
                + "; ".join(f"{checkpoint_basename(n)}: {p}" for n, p in skipped)
                + ". Move the damaged ckpt-* files away to start from scratch, or use a new "
                "--model_dir.", filename=self.model_dir)
        if self.is_chief:
            print(f"warning: the memory saved with every readable checkpoint is damaged; "
                  f"resuming from {ckpt_prefix(self.model_dir, weights_only)} with the memory "
                  "reset to zeros (not an exact continuation).", flush=True)
        return weights_only, weights_only, [(n, p) for n, p in skipped if n != weights_only]

    def _memory_problem(self, number: int) -> Optional[str]:
        """Why the memory saved with step `number` (of any worker) cannot be read, or None.
        Every worker decides from the same files, so all resume from the same step."""
        for worker in memory_workers(self.model_dir):
            try:
                read_memory(self.model_dir, worker, number)
            except CheckpointIOError as error:
                return str(error)
        return None

    def _read_weights(self, number: int) -> None:
        """Restore ckpt-`number` (checked readable) into the checkpoint's objects."""
        path = ckpt_prefix(self.model_dir, number)
        problem = None
        status = None
        with quiet_tf_warnings():
            try:
                status = self.checkpoint.read(path)
                status.assert_existing_objects_matched()
                status.expect_partial()  # e.g. the manager's save_counter
            except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as error:
                problem = CheckpointError(
                    f"the checkpoint {path} does not fit this run ({first_line(error)}). It was "
                    f"written with another model configuration or optimizer; compare "
                    f"{self.model_dir}/config.json with the flags, or use a new --model_dir.")
            except Exception as error:  # noqa: BLE001 - classified just below
                if not is_damage_error(error):
                    raise
                problem = CheckpointIOError(f"the checkpoint {path} cannot be read "
                                            f"({first_line(error)})", filename=path)
            if problem is not None:
                status = None  # else the status lives on with the error and warns at exit
                gc.collect()  # the failed restore warns of its unmatched values when collected
        if problem is None and getattr(self.checkpoint, "model", None) is not None:
            try:  # a checkpoint of more layers than config.json reads without an error
                check_no_extra_weights(checkpoint_model_weights(path), self.checkpoint.model,
                                       path, config_path(self.model_dir))
            except ExtraWeightsError as error:
                problem = CheckpointError(f"{error} Or use a new --model_dir.")
        if problem is not None:
            raise problem
