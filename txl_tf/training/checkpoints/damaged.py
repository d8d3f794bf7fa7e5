"""Damaged training checkpoints moved aside, and the `checkpoint` state file read or rebuilt.

A checkpoint newer than the one a run resumes from that cannot be read is moved with its memory
into `model_dir/damaged/ckpt-<step>/` (`memory-worker-<w>/` beside its files), so that no later
save writes over it; a state file that cannot be parsed goes to `damaged/checkpoint` and is
rebuilt from the `ckpt-<step>.index` files found. Only the chief moves or writes anything.
"""
import os
from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from txl_tf.storage import model_files
from txl_tf.storage import model_dir_layout as layout
from txl_tf.storage.model_dir_layout import DAMAGED_DIR
from txl_tf.storage.atomic_writes import write_text_atomic
from txl_tf.storage.checkpoint_probes import checkpoint_files, quiet_tf_warnings
from txl_tf.training.checkpoints.errors import CheckpointIOError
from txl_tf.training.checkpoints.saving import ckpt_prefix
from txl_tf.training.checkpoints.worker_memory import memory_step_dir, memory_workers

def read_state(model_dir: str) -> Tuple[List[int], Optional[str]]:
    """The checkpoint steps the `checkpoint` state file of `model_dir` lists, and why it cannot
    be parsed or None."""
    path = os.path.join(model_dir, layout.CHECKPOINT_STATE_FILE)
    if not os.path.lexists(path):
        return [], None
    if not model_files.state_file_readable(model_dir):
        return [], ("the 'checkpoint' state file is not a regular file inside the directory "
                    "of at most 1 MiB")
    try:
        with quiet_tf_warnings():
            state = tf.train.get_checkpoint_state(model_dir)
    except (ValueError, tf.errors.OpError):
        state = None
    if state is None:
        return [], "the 'checkpoint' state file cannot be parsed"
    numbers = []
    for name in list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]:
        number = layout.checkpoint_step(name)
        if number is not None:
            numbers.append(number)
    return sorted(set(numbers)), None


def set_aside(model_dir: str, step: int, newer: List[Tuple[int, str]],
              files: Dict[int, List[str]], listed: List[int], state_problem: Optional[str],
              is_chief: bool) -> bool:
    """Report the `newer` (step, problem) checkpoints skipped for ckpt-`step`; the chief moves
    them aside and rebuilds the state file when it does not name `step` as the newest.

    Returns:
      Whether the state file was rewritten (a `CheckpointManager` must then read it again).

    Raises:
      CheckpointIOError: the files cannot be moved (e.g. a read-only `model_dir`).
    """
    if not is_chief:
        return False
    try:
        if newer:
            _report_and_move_aside(model_dir, step, newer)
        if newer or state_problem or step not in listed:
            _rebuild_state(model_dir, step, files, state_problem)
            return True
        return False
    except OSError as error:
        raise CheckpointIOError(
            f"cannot set the damaged checkpoints of {model_dir} aside "
            f"({error.strerror or error}); the run would write over them. Make the "
            "directory writable, or move the newer ckpt-* files away.", error.errno,
            model_dir) from None


def _unique(path: str) -> str:
    candidate, i = path, 1
    while os.path.exists(candidate):
        i += 1
        candidate = f"{path}.{i}"
    return candidate


def _report_and_move_aside(model_dir: str, step: int, newer: List[Tuple[int, str]]) -> None:
    """Move the skipped checkpoints' files (and memory) into model_dir/damaged/ckpt-N/, so that
    no later save reuses their names, and print one line on them."""
    moved = [_move_aside(model_dir, number) for number, _ in newer]
    where = f"; moved to {os.path.join(model_dir, DAMAGED_DIR)}" if any(moved) else ""
    print(f"warning: resuming from {ckpt_prefix(model_dir, step)}, the newest "
          "readable checkpoint; skipped "
          + ", ".join(f"{layout.checkpoint_basename(n)} ({p})" for n, p in newer) + where + ".", flush=True)


def _move_aside(model_dir: str, number: int) -> Optional[str]:
    """Move ckpt-`number`'s files and memory into damaged/ckpt-`number`[.k]/; its path, or
    None when there was nothing to move."""
    moves = [(os.path.join(model_dir, name), name)
             for name in checkpoint_files(model_dir).get(number, [])]
    for worker in memory_workers(model_dir):
        source = memory_step_dir(model_dir, worker, number)
        if os.path.isdir(source):
            moves.append((source, f"{layout.DAMAGED_MEMORY_PREFIX}{worker}"))
    if not moves:
        return None
    target = _unique(layout.checkpoint_prefix(os.path.join(model_dir, DAMAGED_DIR), number))
    os.makedirs(target)
    for source, name in moves:
        os.replace(source, os.path.join(target, name))
    return target


def _rebuild_state(model_dir: str, step: int, files: Dict[int, List[str]],
                   state_problem: Optional[str]) -> None:
    """Rewrite the `checkpoint` state file from the files found (latest: ckpt-`step`), the
    unparsable one moved into damaged/."""
    state = os.path.join(model_dir, layout.CHECKPOINT_STATE_FILE)
    if state_problem and os.path.exists(state):
        os.makedirs(os.path.join(model_dir, DAMAGED_DIR), exist_ok=True)
        kept = _unique(os.path.join(model_dir, DAMAGED_DIR, layout.CHECKPOINT_STATE_FILE))
        os.replace(state, kept)
        print(f"warning: {state_problem}; moved to {kept} and rebuilt from the ckpt-N "
              "files.", flush=True)
    numbers = [n for n in sorted(files)
               if n <= step and f"{layout.checkpoint_basename(n)}.index" in files[n]]
    lines = [f'model_checkpoint_path: "{layout.checkpoint_basename(step)}"']
    lines += [f'all_model_checkpoint_paths: "{layout.checkpoint_basename(n)}"'
              for n in numbers]
    lines += [f"all_model_checkpoint_timestamps: "
              f"{os.path.getmtime(ckpt_prefix(model_dir, n) + '.index')}" for n in numbers]
    # The text format of tf.train.CheckpointManager (TF's own writer of it is deprecated).
    write_text_atomic(state, "\n".join(lines) + "\n")
