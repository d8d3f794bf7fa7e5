"""Training checkpoints of a txl-tf model directory, with the per-worker memory beside them.

Layout of `model_dir` (written by `TrainCheckpoints`):
  config.json                     the model configuration (`txl_tf.save_config`)
  checkpoint, ckpt-<step>.*       `tf.train.CheckpointManager`: the last `max_to_keep` training
                                  checkpoints, root `tf.train.Checkpoint(model=, optimizer=,
                                  step=, loss_scale=, good_steps=, dropout_rng=)`; `txl_tf.load_model`
                                  reads the model part.
  memory/worker-<w>/step-<step>/  the memory of worker w's local replicas after step <step>: a TF
                                  checkpoint of L variables [per_host_batch, M, D] (`layer_0`...),
                                  replicas concatenated in replica order.
  best/                           config.json, checkpoint, ckpt-<step>.* (model and step only),
                                  best.json and the data's vocab.txt and corpus-info.json: the
                                  best checkpoint on validation so far, a complete model
                                  directory (written
                                  whole into .best-tmp-<step>-<pid>/, then swapped in with
                                  `txl_tf.atomic_writes.atomic_directory`).
  damaged/ckpt-<step>/            the files (and memory-worker-<w>/) of a checkpoint newer than
                                  the one resumed from that could not be read, moved aside;
                                  damaged/checkpoint: a state file that could not be parsed.
  schedule.json                   the learning-rate flags of the run that writes the checkpoints.

Atomicity and pairing: the chief gathers the memory of every replica of every worker (one
collective per layer, `checkpoint_memory.gather_worker_memory`), writes each worker's part into
a temporary directory that is renamed to `step-<step>` (a rename is atomic on a local or POSIX
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
import gc
import json
import os
import shutil
import tempfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

import txl_tf
from txl_tf.atomic_writes import (TMP_PREFIX, atomic_directory, write_json_atomic,
                                  write_text_atomic)
from txl_tf.checkpoint_probes import (checkpoint_files, checkpoint_problem, first_line,
                                      is_damage_error, quiet_tf_warnings)
from txl_tf.model_files import BEST_DIR, BEST_FILE
from txl_tf.training.checkpoint_errors import CheckpointError, CheckpointIOError, save_error
from txl_tf.training.checkpoint_memory import (memory_dir, memory_step_dir, memory_workers,
                                               prune_memory, read_memory, write_memory)

DAMAGED_DIR = "damaged"
SCHEDULE_FILE = "schedule.json"
_BEST_TMP = ".best-tmp-"
_BEST_OLD = ".best-old"


def _ckpt_prefix(directory: str, number: int) -> str:
    return os.path.join(directory, f"ckpt-{number}")


def dropout_rng_state(model) -> tf.train.Checkpoint:
    """The Keras dropout seed-generator states of `model` as a trackable (Keras does not put them
    in `tf.train.Checkpoint(model=model)`), so that a resumed run draws the same dropout masks."""
    states = [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]
    return tf.train.Checkpoint(**{f"state_{i}": v for i, v in enumerate(states)})


def _unique(path: str) -> str:
    candidate, i = path, 1
    while os.path.exists(candidate):
        i += 1
        candidate = f"{path}.{i}"
    return candidate


def _is_leftover(directory: str, name: str) -> bool:
    """Whether `name` in `directory` is what an interrupted or failed save left behind."""
    if name.startswith("ckpt-") and name.endswith("_temp"):  # sharded TF saves
        return True
    if name.startswith((".tmp-step-", _BEST_TMP, _BEST_OLD, "checkpoint.tmp")):
        return True
    return name.startswith(TMP_PREFIX) and os.path.isfile(os.path.join(directory, name))


def clean_temporary(model_dir: str) -> List[str]:
    """Delete what interrupted or failed saves left in `model_dir`: `ckpt-N_temp/` (sharded
    TF saves, also in best/), memory `.tmp-step-*` directories, `.tmp-*` files of atomic
    writes and unfinished copies of best/ (an interrupted swap of best/ is undone first).
    Returns the paths deleted."""
    removed = []
    best, old = os.path.join(model_dir, BEST_DIR), os.path.join(model_dir, _BEST_OLD)
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


class TrainCheckpoints:
    """Saving and restoring training state in `model_dir`.

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
    """

    def __init__(self, model_dir: str, trackables: dict, max_to_keep: int = 5, worker: int = 0,
                 is_chief: bool = True):
        if "model" not in trackables:
            raise ValueError("the training checkpoint must hold the model under 'model'.")
        self.model_dir = model_dir
        self.worker = worker
        self.is_chief = is_chief
        self.max_to_keep = max_to_keep
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self.restored_path = None
        self._model = trackables["model"]
        self.manager = self._make_manager()

    def _make_manager(self) -> tf.train.CheckpointManager:
        directory = (self.model_dir if self.is_chief
                     else tempfile.mkdtemp(prefix="txl-nonchief-ckpt-"))
        with quiet_tf_warnings():
            return tf.train.CheckpointManager(self.checkpoint, directory,
                                              max_to_keep=self.max_to_keep,
                                              checkpoint_name="ckpt")

    @property
    def latest(self) -> Optional[str]:
        with quiet_tf_warnings():
            return txl_tf.latest_checkpoint(self.model_dir)

    # ------------------------------------------------------------------------------------ save
    def save(self, step: int, memories: Sequence[Sequence[np.ndarray]]) -> Optional[str]:
        """Chief: write every worker's memory (`memories[w]`: worker w's L arrays, from
        `gather_worker_memory`), then the training checkpoint of `step`. Other workers take part
        in the checkpoint's collectives but write only into a temporary directory, deleted
        right after (tf.distribute's recipe; a full copy of weights and Adam state per save
        would otherwise pile up in their /tmp).

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
        prefix = _ckpt_prefix(self.model_dir, step)
        if self.manager.latest_checkpoint == prefix:
            return
        for name in checkpoint_files(self.model_dir).get(step, []):
            os.remove(os.path.join(self.model_dir, name))
        for worker in memory_workers(self.model_dir):
            shutil.rmtree(memory_step_dir(self.model_dir, worker, step),
                          ignore_errors=True)
        clean_temporary(self.model_dir)

    # --------------------------------------------------------------------------------- restore
    def restore(self) -> Tuple[Optional[int], Optional[List[np.ndarray]]]:
        """Restore the newest readable training checkpoint of `model_dir`, if any.

        Candidates are the `ckpt-N` found in the directory and in the `checkpoint` state file,
        newest first. One is taken when its weights restore and the memory of every worker
        saved with it reads whole; newer ones that fail are moved aside (chief) and named in
        one printed line. When every checkpoint with readable weights has damaged memory, the
        newest of them is taken with the memory reset to zeros (warning).

        Returns:
          (step, this worker's memory arrays or None); (None, None) when there is no checkpoint.

        Raises:
          CheckpointError: the checkpoint was written for another model or optimizer.
          CheckpointIOError: checkpoint files exist but none can be read.
        """
        if self.is_chief:
            clean_temporary(self.model_dir)
        files = checkpoint_files(self.model_dir)
        listed, state_problem = self._read_state()
        candidates = sorted(set(files) | set(listed), reverse=True)
        if not candidates:
            return None, None
        step, weights_only, skipped = self._choose(candidates, files)
        self._read_weights(step)
        memory = (None if step == weights_only
                  else read_memory(self.model_dir, self.worker, step))
        self._set_aside(step, [(n, p) for n, p in skipped if n > step], files, listed,
                        state_problem)
        self.restored_path = _ckpt_prefix(self.model_dir, step)
        if memory is None:
            logging.warning("no memory saved for step %d of worker %d in %s: the memory restarts "
                            "from zeros (the run is not an exact continuation).", step,
                            self.worker, self.model_dir)
        return step, memory

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
            problem = (checkpoint_problem(_ckpt_prefix(self.model_dir, number))
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
                + "; ".join(f"ckpt-{n}: {p}" for n, p in skipped)
                + ". Move the damaged ckpt-* files away to start from scratch, or use a new "
                "--model_dir.", filename=self.model_dir)
        if self.is_chief:
            print(f"warning: the memory saved with every readable checkpoint is damaged; "
                  f"resuming from {_ckpt_prefix(self.model_dir, weights_only)} with the memory "
                  "reset to zeros (not an exact continuation).", flush=True)
        return weights_only, weights_only, [(n, p) for n, p in skipped if n != weights_only]

    def _set_aside(self, step: int, newer: List[Tuple[int, str]], files: Dict[int, List[str]],
                   listed: List[int], state_problem: Optional[str]) -> None:
        """Move the `newer` damaged checkpoints aside and rebuild the state file (chief)."""
        try:
            if newer:
                self._report_and_move_aside(step, newer)
            if self.is_chief and (newer or state_problem or step not in listed):
                self._rebuild_state(step, files, state_problem)
        except OSError as error:  # e.g. a read-only model_dir
            raise CheckpointIOError(
                f"cannot set the damaged checkpoints of {self.model_dir} aside "
                f"({error.strerror or error}); the run would write over them. Make the "
                "directory writable, or move the newer ckpt-* files away.", error.errno,
                self.model_dir) from None

    def _read_state(self) -> Tuple[List[int], Optional[str]]:
        """The checkpoint numbers the `checkpoint` state file lists, and a problem or None."""
        path = os.path.join(self.model_dir, "checkpoint")
        if not os.path.exists(path):
            return [], None
        try:
            with quiet_tf_warnings():
                state = tf.train.get_checkpoint_state(self.model_dir)
        except (ValueError, tf.errors.OpError):
            state = None
        if state is None:
            return [], "the 'checkpoint' state file cannot be parsed"
        numbers = []
        for name in list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]:
            tail = os.path.basename(name)
            if tail.startswith("ckpt-") and tail[5:].isdigit():
                numbers.append(int(tail[5:]))
        return sorted(set(numbers)), None

    def _read_weights(self, number: int) -> None:
        """Restore ckpt-`number` (checked readable) into the trackables."""
        path = _ckpt_prefix(self.model_dir, number)
        problem = None
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
                gc.collect()  # the failed restore warns of its unmatched values when collected
        if problem is not None:
            raise problem

    def _memory_problem(self, number: int) -> Optional[str]:
        """Why the memory saved with step `number` (of any worker) cannot be read, or None.
        Every worker decides from the same files, so all resume from the same step."""
        for worker in memory_workers(self.model_dir):
            try:
                read_memory(self.model_dir, worker, number)
            except CheckpointIOError as error:
                return str(error)
        return None

    def _report_and_move_aside(self, step: int, newer: List[Tuple[int, str]]) -> None:
        """Print one line on the skipped checkpoints; the chief moves their files (and memory)
        into model_dir/damaged/ckpt-N/, so that no later save reuses their names."""
        if not self.is_chief:
            return
        moved = [self._move_aside(number) for number, _ in newer]
        where = (f"; moved to {os.path.join(self.model_dir, DAMAGED_DIR)}" if any(moved)
                 else "")
        print(f"warning: resuming from {_ckpt_prefix(self.model_dir, step)}, the newest "
              "readable checkpoint; skipped "
              + ", ".join(f"ckpt-{n} ({p})" for n, p in newer) + where + ".", flush=True)

    def _move_aside(self, number: int) -> Optional[str]:
        """Move ckpt-`number`'s files and memory into damaged/ckpt-`number`[.k]/; its path, or
        None when there was nothing to move."""
        moves = [(os.path.join(self.model_dir, name), name)
                 for name in checkpoint_files(self.model_dir).get(number, [])]
        for worker in memory_workers(self.model_dir):
            source = memory_step_dir(self.model_dir, worker, number)
            if os.path.isdir(source):
                moves.append((source, f"memory-worker-{worker}"))
        if not moves:
            return None
        target = _unique(os.path.join(self.model_dir, DAMAGED_DIR, f"ckpt-{number}"))
        os.makedirs(target)
        for source, name in moves:
            os.replace(source, os.path.join(target, name))
        return target

    def _rebuild_state(self, step: int, files: Dict[int, List[str]],
                       state_problem: Optional[str]) -> None:
        """Rewrite the `checkpoint` state file from the files found (latest: ckpt-`step`), the
        unparsable one moved into damaged/, and let a new manager take over the list."""
        state = os.path.join(self.model_dir, "checkpoint")
        if state_problem and os.path.exists(state):
            os.makedirs(os.path.join(self.model_dir, DAMAGED_DIR), exist_ok=True)
            kept = _unique(os.path.join(self.model_dir, DAMAGED_DIR, "checkpoint"))
            os.replace(state, kept)
            print(f"warning: {state_problem}; moved to {kept} and rebuilt from the ckpt-N "
                  "files.", flush=True)
        numbers = [n for n in sorted(files) if n <= step and f"ckpt-{n}.index" in files[n]]
        lines = [f'model_checkpoint_path: "ckpt-{step}"']
        lines += [f'all_model_checkpoint_paths: "ckpt-{n}"' for n in numbers]
        lines += [f"all_model_checkpoint_timestamps: "
                  f"{os.path.getmtime(_ckpt_prefix(self.model_dir, n) + '.index')}"
                  for n in numbers]
        # The text format of tf.train.CheckpointManager (TF's own writer of it is deprecated).
        write_text_atomic(state, "\n".join(lines) + "\n")
        self.manager = self._make_manager()

    # ------------------------------------------------------------------------------ best model
    def best_metric(self) -> Optional[float]:
        path = os.path.join(self.model_dir, BEST_DIR, BEST_FILE)
        if not os.path.exists(path):
            return None
        try:
            with open(path) as f:
                return float(json.load(f)["valid_loss"])
        except (ValueError, KeyError, TypeError, OSError) as error:
            print(f"warning: {path} cannot be read ({first_line(error)}); the next evaluation "
                  "replaces best/.", flush=True)
            return None

    def maybe_save_best(self, step: int, valid_loss: float, extra: dict,
                        copy_data_files: Optional[Callable[[str], None]] = None) -> bool:
        """Chief: keep `model_dir/best/` as the best checkpoint on validation so far. The new
        best/ is written whole into a temporary directory, then swapped in.

        Args:
          step: the training step; valid_loss: its validation loss (nats per token).
          extra: more best.json fields (e.g. {"bpc": ...}).
          copy_data_files: `copy_data_files(directory)` writes the vocabulary files into the
            new best/ (`DataSource.copy_to`), so that it is a complete model directory.

        Raises:
          CheckpointIOError: the copy failed (e.g. disk full); best/ is left as it was.
        """
        if not self.is_chief:
            return False
        best = self.best_metric()
        if best is not None and not valid_loss < best:
            return False
        final = os.path.join(self.model_dir, BEST_DIR)
        try:
            with atomic_directory(final, f"{_BEST_TMP}{step}-{os.getpid()}", _BEST_OLD) as tmp:
                txl_tf.save_config(self._model.config, tmp)
                tf.train.CheckpointManager(tf.train.Checkpoint(model=self._model), tmp,
                                           max_to_keep=1, checkpoint_name="ckpt"
                                           ).save(checkpoint_number=step)
                write_json_atomic(os.path.join(tmp, BEST_FILE),
                                  dict(extra, step=step, valid_loss=valid_loss))
                if copy_data_files is not None:
                    copy_data_files(tmp)
        except (OSError, tf.errors.OpError) as error:
            previous = txl_tf.latest_checkpoint(final)
            raise save_error(error, f"the best checkpoint (step {step})", self.model_dir,
                             previous and f"{previous} (best/)") from None
        return True
