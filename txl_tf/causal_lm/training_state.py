"""The training state `TransformerXLCausalLM` saves next to its weights (hence in
`save_weights`, `ModelCheckpoint` and `BackupAndRestore` files): the training memory of every
local replica and the dynamic loss scale of its replica step.

Store keys: "memory" float32 [L, R * B, M, D] (local replicas in order, present once `fit`
made the memory), "loss_scale" and "good_steps" (present once compiled).
"""
from typing import Optional

import numpy as np

from txl_tf.causal_lm.replica_memory import ReplicaMemory
from txl_tf.training.replica_step import ReplicaStep


def write_training_state(memory: ReplicaMemory, replica_step: Optional[ReplicaStep],
                         store) -> None:
    """Writes the training memory and the loss-scaling state into `store`."""
    if memory.variable is not None:
        store["memory"] = memory.to_host()
    if replica_step is not None:
        store["loss_scale"] = np.asarray(replica_step.loss_scale.numpy())
        store["good_steps"] = np.asarray(replica_step.good_steps.numpy())


def read_training_state(memory: ReplicaMemory, replica_step: Optional[ReplicaStep], store,
                        strategy) -> bool:
    """Restores what `write_training_state` wrote (the memory of every local replica, placed
    with `strategy`); True when the memory variable was made anew (a function traced on the
    previous one must be traced again)."""
    keys = set(store.keys())
    replaced = False
    if "memory" in keys:
        replaced = bool(memory.from_host(np.asarray(store["memory"]), strategy))
    if replica_step is not None and "loss_scale" in keys:
        replica_step.loss_scale.assign(np.asarray(store["loss_scale"]))
        replica_step.good_steps.assign(np.asarray(store["good_steps"]))
    return replaced
