"""Where a training run's processes run and how its batch is split.

`build_strategy` makes the run's strategy (`auto`: `distribute.resolve_auto`, with one line
saying what was chosen), `build_placement` this worker's `Placement` (worker, replicas, input
hosts, the batch per replica), `fit_batch` the gradient accumulation that makes a replica's
chunk fit (`batch_fit`).
"""
import dataclasses

import tensorflow as tf

from txl_tf.training import batch_fit
from txl_tf.training import distribute
from txl_tf.training.errors import TrainError


@dataclasses.dataclass
class Placement:
    """Where this process runs and how the batch is split.

    Attributes:
      worker, num_workers, is_chief: this worker's index, the workers, whether it writes.
      replicas: replicas in sync (all workers).
      hosts, local: input hosts (a TPU pod slice: one client, several hosts) and replicas per
        host.
      global_batch, per_replica, valid_per_replica: training streams in all, per replica, and
        validation streams per replica.
    """
    worker: int
    num_workers: int
    is_chief: bool
    replicas: int
    hosts: int
    local: int
    global_batch: int
    per_replica: int
    valid_per_replica: int


def build_strategy(o) -> tf.distribute.Strategy:
    """The strategy of `o.strategy` (`o`: the run's `TrainOptions`); for `auto` (the recipes'
    setting) one line says what was chosen and why."""
    if o.strategy != "auto":
        return distribute.create_strategy(o.strategy, tpu=o.tpu, devices=o.devices,
                                          tpu_timeout=o.tpu_timeout)
    choice = distribute.resolve_auto(o.tpu, o.devices)
    print(f"strategy: {choice.name} ({choice.reason}; --strategy=auto, give --strategy to "
          "force one)", flush=True)
    return distribute.create_strategy(choice.name, tpu=choice.tpu, devices=o.devices,
                                      tpu_timeout=o.tpu_timeout)


def build_placement(o, strategy: tf.distribute.Strategy) -> Placement:
    """This worker's `Placement` under `strategy` for the batch flags of `o` (the run's
    `TrainOptions`); raises `TrainError` for a batch the replicas cannot share."""
    worker, num_workers, is_chief = distribute.worker_info(strategy)
    replicas = strategy.num_replicas_in_sync
    hosts, local = distribute.input_hosts(strategy)
    global_batch = o.train_batch_size or o.per_host_train_bsz * hosts
    if global_batch % replicas:
        raise TrainError(
            f"the global batch ({global_batch}) is not divisible by the {replicas} replicas of "
            f"--strategy={o.strategy}; choose a batch that is a multiple of {replicas}.")
    per_replica = global_batch // replicas
    if per_replica % o.grad_accum_steps:
        raise TrainError(
            f"--grad_accum_steps={o.grad_accum_steps} must divide the per-replica batch "
            f"({per_replica} = {global_batch} / {replicas} replicas).")
    valid_per_replica = (o.per_host_valid_bsz * hosts // replicas
                         if o.per_host_valid_bsz else per_replica)
    if valid_per_replica < 1:
        raise TrainError(f"--per_host_valid_bsz={o.per_host_valid_bsz} leaves no stream per "
                         f"replica ({replicas} replicas).")
    return Placement(worker, num_workers, is_chief, replicas, hosts, local, global_batch,
                     per_replica, valid_per_replica)


def fit_batch(o, config, place: Placement, strategy: tf.distribute.Strategy):
    """(`o` with the `grad_accum_steps` that makes each replica's chunk of `config`'s model
    fit, the memory estimate behind the choice); one line when it had to be raised."""
    fit = batch_fit.fit_per_replica_batch(config, place.per_replica, o.grad_accum_steps,
                                          o.max_per_replica_batch, strategy, place.local)
    if fit.reason and place.is_chief:
        print(fit.reason, flush=True)
    return dataclasses.replace(o, grad_accum_steps=fit.grad_accum_steps), fit.estimate
