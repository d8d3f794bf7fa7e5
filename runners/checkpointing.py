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
  best/                           config.json, checkpoint, ckpt-<step>.* (model and step only) and
                                  best.json: the best checkpoint on validation so far.

Atomicity and pairing: the chief gathers the memory of every replica of every worker (one
collective per layer, `gather_worker_memory`), writes each worker's part into a temporary
directory that is renamed to `step-<step>` (a rename is atomic on a local or POSIX file system),
then writes ckpt-<step>, whose `checkpoint` state file is switched last by the manager. A run
killed at any moment thus leaves either the previous pair or the new one: on restart `restore()`
reads the newest training checkpoint and the memory of the same step (memory written for a step
whose checkpoint never landed is ignored and later overwritten).
Only the chief writes into model_dir (ckpt-*, memory/, best/, summaries); the other workers join
the checkpoint's collectives but save into a temporary directory outside it, as tf.distribute
recommends, and only read model_dir (config.json, the checkpoint and their memory on restore).
The stream position needs no file: every stream advances one segment per step, so the position
is the step itself (`tf_records.make_input_fn(..., start_step=step)`).
"""
import json
import os
import shutil
import tempfile
import weakref
from typing import List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

import txl_tf

MEMORY_DIR = "memory"
# Memory is kept for every kept training checkpoint, so each one resumes exactly. It can
# outweigh the weights (enwik8-large: 24 x 64 x 768 x 1024 floats = 4.8 GB per checkpoint);
# --nocheckpoint_memory (runners/train.py) saves none.
BEST_DIR = "best"
BEST_FILE = "best.json"


class CheckpointError(ValueError):
    """A checkpoint that does not fit the run."""


def dropout_rng_state(model) -> tf.train.Checkpoint:
    """The Keras dropout seed-generator states of `model` as a trackable (Keras does not put them
    in `tf.train.Checkpoint(model=model)`), so that a resumed run draws the same dropout masks."""
    states = [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]
    return tf.train.Checkpoint(**{f"state_{i}": v for i, v in enumerate(states)})


def _memory_dir(model_dir: str, worker: int) -> str:
    return os.path.join(model_dir, MEMORY_DIR, f"worker-{worker}")


def _memory_prefix(model_dir: str, worker: int, step: int) -> str:
    return os.path.join(_memory_dir(model_dir, worker), f"step-{step}", "memory")


def write_memory(model_dir: str, worker: int, step: int, arrays: Sequence[np.ndarray],
                 keep: int) -> str:
    """Atomically write worker `worker`'s memory after `step`; keep the newest `keep` steps."""
    directory = _memory_dir(model_dir, worker)
    os.makedirs(directory, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".tmp-step-{step}-", dir=directory)
    with tf.device("/CPU:0"):
        variables = {f"layer_{i}": tf.Variable(a, trainable=False) for i, a in enumerate(arrays)}
    tf.train.Checkpoint(**variables).write(os.path.join(tmp, "memory"))
    final = os.path.join(directory, f"step-{step}")
    if os.path.exists(final):  # from an earlier attempt whose training checkpoint never landed
        shutil.rmtree(final)
    os.replace(tmp, final)
    steps = sorted(memory_steps(model_dir, worker))
    for old in steps[:-keep] if keep > 0 else []:
        shutil.rmtree(os.path.join(directory, f"step-{old}"), ignore_errors=True)
    for name in os.listdir(directory):
        if name.startswith(".tmp-step-") and os.path.join(directory, name) != tmp:
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
    return final


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
    directory = _memory_dir(model_dir, worker)
    if not os.path.isdir(directory):
        return []
    return [int(n[5:]) for n in os.listdir(directory)
            if n.startswith("step-") and n[5:].isdigit()]


def read_memory(model_dir: str, worker: int, step: int) -> Optional[List[np.ndarray]]:
    """Worker `worker`'s memory after `step`, or None when it was not saved."""
    prefix = _memory_prefix(model_dir, worker, step)
    if not tf.io.gfile.exists(prefix + ".index"):
        return None
    reader = tf.train.load_checkpoint(prefix)
    names = sorted((n for n in reader.get_variable_to_shape_map() if n.startswith("layer_")),
                   key=lambda n: int(n.split("/")[0][6:]))
    return [reader.get_tensor(n) for n in names]


class TrainCheckpoints:
    """Saving and restoring training state in `model_dir`.

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
        directory = model_dir if is_chief else tempfile.mkdtemp(prefix="txl-nonchief-ckpt-")
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory,
                                                  max_to_keep=max_to_keep, checkpoint_name="ckpt")
        self._model = trackables["model"]
        self._best_manager = None

    @property
    def latest(self) -> Optional[str]:
        return tf.train.latest_checkpoint(self.model_dir)

    def save(self, step: int, memories: Sequence[Sequence[np.ndarray]]) -> Optional[str]:
        """Chief: write every worker's memory (`memories[w]`: worker w's L arrays, from
        `gather_worker_memory`), then the training checkpoint of `step`. Other workers take part
        in the checkpoint's collectives but write only into a temporary directory, deleted
        right after (tf.distribute's recipe; a full copy of weights and Adam state per save
        would otherwise pile up in their /tmp)."""
        if self.is_chief:
            for worker, memory in enumerate(memories):
                write_memory(self.model_dir, worker, step, memory, keep=self.max_to_keep)
        path = self.manager.save(checkpoint_number=step)
        if not self.is_chief:
            shutil.rmtree(self.manager.directory, ignore_errors=True)
            return None
        return path

    def restore(self) -> Tuple[Optional[int], Optional[List[np.ndarray]]]:
        """Restore the newest training checkpoint of `model_dir`, if any.

        Returns (step, memory arrays or None); (None, None) when there is no checkpoint.
        """
        path = self.latest
        if path is None:
            return None, None
        try:
            status = self.checkpoint.read(path)
            status.assert_existing_objects_matched()
            status.expect_partial()  # e.g. the manager's save_counter
        except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as error:
            raise CheckpointError(
                f"the checkpoint {path} does not fit this run ({error}). It was written with "
                f"another model configuration or optimizer; compare {self.model_dir}/config.json "
                "with the flags, or use a new --model_dir.") from None
        step = int(path.rsplit("-", 1)[1])
        memory = read_memory(self.model_dir, self.worker, step)
        if memory is None:
            logging.warning("no memory saved for step %d of worker %d in %s: the memory restarts "
                            "from zeros (the run is not an exact continuation).", step,
                            self.worker, self.model_dir)
        return step, memory

    # ------------------------------------------------------------------------------ best model
    def best_metric(self) -> Optional[float]:
        path = os.path.join(self.model_dir, BEST_DIR, BEST_FILE)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return float(json.load(f)["valid_loss"])

    def maybe_save_best(self, step: int, valid_loss: float, extra: dict) -> bool:
        """Chief: keep `model_dir/best/` as the best checkpoint on validation so far."""
        if not self.is_chief:
            return False
        best = self.best_metric()
        if best is not None and not valid_loss < best:
            return False
        directory = os.path.join(self.model_dir, BEST_DIR)
        if self._best_manager is None:
            self._best_manager = tf.train.CheckpointManager(
                tf.train.Checkpoint(model=self._model), directory, max_to_keep=1,
                checkpoint_name="ckpt")
        txl_tf.save_config(self._model.config, directory)
        self._best_manager.save(checkpoint_number=step)
        txl_tf.model_dir.write_json_atomic(os.path.join(directory, BEST_FILE),
                                           dict(extra, step=step, valid_loss=valid_loss))
        return True
