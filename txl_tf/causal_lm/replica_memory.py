"""`ReplicaMemory`: the memory of every replica's streams, kept from one step to the next.

Glossary: L n_layer, B per-replica batch (streams), M mem_len, D d_model, R replicas.

Each replica owns the memory of its own B streams. It lives in one per-replica variable
(`synchronization=ON_READ`: under `MirroredStrategy` every replica reads and writes its own
copy, nothing is synchronised) of shape [L, B, M, D], which a step running in replica context
reads (`read`) and overwrites (`write`). On the host it is one array [L, R * B, M, D], the
local replicas' rows in replica order (as `Trainer.memory_to_host`), for saving and restoring.
"""
from typing import List, Optional

import numpy as np
import tensorflow as tf

from txl_tf.training.distribute import local_replicas


class ReplicaMemory:
    """Per-replica memory L x [B, M, D] of B contiguous streams on every replica.

    Args:
      n_layer, mem_len, d_model: L, M, D of the model.
      name: the variable's name.

    Example:
      >>> memory = ReplicaMemory(n_layer=2, mem_len=8, d_model=16)
      >>> memory.ensure(streams=4)       # under the strategy that will train
      True
      >>> memory.to_host().shape         # one replica
      (2, 4, 8, 16)
    """

    def __init__(self, n_layer: int, mem_len: int, d_model: int, name: str = "memory"):
        self.shape = (int(n_layer), int(mem_len), int(d_model))
        self.name = name
        self.variable: Optional[tf.Variable] = None
        self.strategy: Optional[tf.distribute.Strategy] = None

    @property
    def streams(self) -> Optional[int]:
        """B, the streams of each replica (None before `ensure`)."""
        return None if self.variable is None else int(self.variable.shape[1])

    def ensure(self, streams: int, strategy: Optional[tf.distribute.Strategy] = None) -> bool:
        """Creates zero memory of `streams` streams per replica unless it exists with that
        many under `strategy` (default: the current one).

        Returns:
          True if a new variable was created (a traced step must then be traced again).
        """
        strategy = strategy or tf.distribute.get_strategy()
        if self.variable is not None and self.streams == streams and self.strategy is strategy:
            return False
        n_layer, mem_len, d_model = self.shape
        with strategy.scope():
            self.variable = tf.Variable(
                tf.zeros([n_layer, streams, mem_len, d_model], tf.float32), trainable=False,
                name=self.name, synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.NONE)
        self.strategy = strategy
        return True

    # ------------------------------------------------------------------ inside a replica step
    def read(self) -> List[tf.Tensor]:
        """This replica's memory: L float32 [B, M, D] (in replica context)."""
        return tf.unstack(tf.identity(self.variable), num=self.shape[0], axis=0)

    def write(self, mems: List[tf.Tensor]):
        """Stores this replica's new memory L x [B, M, D] (in replica context)."""
        return self.variable.assign(tf.stack([tf.cast(m, tf.float32) for m in mems], axis=0))

    # ------------------------------------------------------------------------------- host
    def _replica_variables(self):
        return self.strategy.experimental_local_results(self.variable)

    def to_host(self) -> np.ndarray:
        """float32 [L, R * B, M, D]: the local replicas' memory, concatenated in replica order."""
        return np.concatenate([v.numpy() for v in self._replica_variables()], axis=1)

    def from_host(self, array: np.ndarray, strategy: Optional[tf.distribute.Strategy] = None):
        """Sets every replica's memory from `to_host`'s layout [L, R * B, M, D] (creating the
        variable if needed): row block r goes to local replica r.

        Returns:
          True if a new variable was created (as `ensure`).

        Raises:
          ValueError: the array's shape does not fit this model or the replicas.
        """
        array = np.asarray(array, np.float32)
        strategy = strategy or self.strategy or tf.distribute.get_strategy()
        replicas = local_replicas(strategy)
        n_layer, mem_len, d_model = self.shape
        if (array.ndim != 4 or (array.shape[0], array.shape[2], array.shape[3]) != self.shape
                or array.shape[1] % replicas):
            raise ValueError(
                f"saved memory of shape {list(array.shape)} does not fit [{n_layer}, streams, "
                f"{mem_len}, {d_model}] over {replicas} replicas; load weights saved by the "
                "same model configuration and number of replicas.")
        created = self.ensure(array.shape[1] // replicas, strategy)
        for variable, part in zip(self._replica_variables(), np.split(array, replicas, axis=1)):
            variable.assign(part)
        return created

    def reset(self):
        """Zero memory on every replica (nothing happens before `ensure`)."""
        if self.variable is not None:
            for variable in self._replica_variables():
                variable.assign(tf.zeros_like(variable))
