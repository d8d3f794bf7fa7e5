"""The memory files of a training checkpoint: each worker's memory after a step, beside ckpt-<step>.

`model_dir/memory/worker-<w>/step-<step>/memory.*` is a TF checkpoint of L variables
`layer_0`... of shape [per_host_batch, M, D]: worker w's local replicas concatenated in replica
order. Each step's directory is written whole into a temporary directory and renamed into place
(see `txl_tf.training.checkpoints.saving` for how it pairs with the training checkpoint).
"""
import os
import shutil
import uuid
import weakref
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from txl_tf.storage.atomic_writes import atomic_directory
from txl_tf.storage.checkpoint_probes import is_damage_error
from txl_tf.storage import model_dir_layout as layout
from txl_tf.runtime.error_text import first_line
from txl_tf.training.checkpoints.errors import CheckpointIOError

# Memory is kept for every kept training checkpoint, so each one resumes exactly. It can
# outweigh the weights (enwik8-large: 24 x 64 x 768 x 1024 floats = 4.8 GB per checkpoint);
# --nocheckpoint_memory (runners/train.py) saves none.


def memory_dir(model_dir: str, worker: int) -> str:
    """The directory of worker `worker`'s memory steps."""
    return layout.memory_worker_dir(model_dir, worker)


def memory_step_dir(model_dir: str, worker: int, step: int) -> str:
    """The directory of worker `worker`'s memory after `step`."""
    return layout.memory_step_dir(model_dir, worker, step)


def _memory_prefix(model_dir: str, worker: int, step: int) -> str:
    return os.path.join(memory_step_dir(model_dir, worker, step), layout.MEMORY_PREFIX)


def memory_workers(model_dir: str) -> List[int]:
    """The workers that have a memory directory in `model_dir`."""
    directory = os.path.join(model_dir, layout.MEMORY_DIR)
    if not os.path.isdir(directory):
        return []
    prefix = layout.MEMORY_WORKER_PREFIX
    return sorted(int(n[len(prefix):]) for n in os.listdir(directory)
                  if n.startswith(prefix) and n[len(prefix):].isdigit())


def write_memory(model_dir: str, worker: int, step: int, arrays: Sequence[np.ndarray],
                 keep: Optional[int] = None) -> str:
    """Atomically write worker `worker`'s memory after `step` (a temporary directory renamed
    to `step-<step>`). With `keep`, only the newest `keep` steps are kept (`CheckpointSaver`
    prunes after the training checkpoint landed instead)."""
    final = memory_step_dir(model_dir, worker, step)
    # A step-<step> already there is from an earlier attempt whose checkpoint never landed.
    tag = f"{step}-{uuid.uuid4().hex}"
    with atomic_directory(final, f"{layout.MEMORY_STEP_TMP_PREFIX}{tag}",
                          f"{layout.MEMORY_STEP_TMP_PREFIX}old-{tag}") as tmp:
        with tf.device("/CPU:0"):
            variables = {f"layer_{i}": tf.Variable(a, trainable=False)
                         for i, a in enumerate(arrays)}
        tf.train.Checkpoint(**variables).write(os.path.join(tmp, layout.MEMORY_PREFIX))
    if keep is not None:
        prune_memory(model_dir, worker, sorted(memory_steps(model_dir, worker))[-keep:])
    return final


def prune_memory(model_dir: str, worker: int, keep_steps: Sequence[int]) -> None:
    """Delete worker `worker`'s memory of every step not in `keep_steps`."""
    for old in set(memory_steps(model_dir, worker)) - set(keep_steps):
        shutil.rmtree(memory_step_dir(model_dir, worker, old),
                      ignore_errors=True)


_GATHER_FNS = weakref.WeakKeyDictionary()


def gather_worker_memory(strategy: tf.distribute.Strategy, mems, num_workers: int,
                         local_memory: Sequence[np.ndarray]) -> List[List[np.ndarray]]:
    """Every worker's memory, index = worker: L numpy arrays [per_host_batch, M, D] each.

    One worker: `[local_memory]` (the arrays of `Trainer.memory_to_host`). Several workers:
    `strategy.gather` (a collective every worker must call) concatenates the replicas' memory in
    global replica order, and worker w owns the w-th block of rows (its local replicas are the
    global replicas w * local ... (w + 1) * local - 1).
    """
    if num_workers == 1:
        return [list(local_memory)]
    gather = _GATHER_FNS.get(strategy)
    if gather is None:  # one compiled gather per strategy (eagerly, every call retraced)
        gather = _GATHER_FNS[strategy] = tf.function(
            lambda values: [strategy.gather(v, axis=0) for v in values])
    full = [t.numpy() for t in gather(list(mems))]
    rows = full[0].shape[0] // num_workers if full else 0
    return [[a[w * rows:(w + 1) * rows] for a in full] for w in range(num_workers)]


def memory_steps(model_dir: str, worker: int) -> List[int]:
    """The steps whose memory worker `worker` has in `model_dir` (unordered)."""
    directory = memory_dir(model_dir, worker)
    if not os.path.isdir(directory):
        return []
    prefix = layout.MEMORY_STEP_PREFIX
    return [int(n[len(prefix):]) for n in os.listdir(directory)
            if n.startswith(prefix) and n[len(prefix):].isdigit()]


def read_memory(model_dir: str, worker: int, step: int) -> Optional[List[np.ndarray]]:
    """Worker `worker`'s memory after `step`, or None when it was not saved.

    Raises:
      CheckpointIOError: the memory directory of that step exists but cannot be read (a file
        missing, truncated or garbage).
    """
    prefix = _memory_prefix(model_dir, worker, step)
    if not os.path.isdir(os.path.dirname(prefix)):
        return None
    try:
        reader = tf.train.load_checkpoint(prefix)
        names = sorted((n for n in reader.get_variable_to_shape_map()
                        if n.startswith("layer_")), key=lambda n: int(n.split("/")[0][6:]))
        return [reader.get_tensor(n) for n in names]
    except Exception as error:  # noqa: BLE001 - classified just below
        if not is_damage_error(error):
            raise
        raise CheckpointIOError(f"the memory file {prefix} is damaged ({first_line(error)})",
                                filename=prefix) from None
