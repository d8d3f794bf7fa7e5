"""`Trainer`: the compiled multi-step training loop and the evaluation loop of txl-tf.

Glossary: B per-replica batch, Q tgt_len, M mem_len, D d_model, L n_layer, R replicas.

Design:
  * One code path for every strategy: the model, optimizer and step counter live under
    `strategy.scope()`; batches come from a distributed iterator (`distribute_datasets_from_function`)
    and each step runs in `strategy.run`.
  * Memory: per-replica state owned by the caller. `train(iterator, mems, n)` runs n steps inside
    one `tf.function` (a `tf.while_loop`), carries the memory from step to step as loop variables,
    and returns the memory of the last step; the caller hands it back in at the next call. Nothing
    ever resets it (not a loop boundary, an evaluation or a checkpoint). `memory_to_host` /
    `memory_from_host` convert it to / from numpy arrays [per_host_batch, M, D] (local replicas
    concatenated in replica order) for checkpoints.
  * Step: one replica's step (forward, loss, gradients, cross-replica sum, clip, loss scaling,
    accumulation, apply) is `txl_tf.training.replica_step.ReplicaStep`, which
    `TransformerXLCausalLM.fit` runs too; the `Trainer` owns the loop around it: `strategy.run`
    each step, the memory carried as loop variables, the step counter and the statistics.
  * Half loss: `LoopStats.loss` is then the half-loss mean and `LoopStats.tokens` still counts
    every target token (throughput); evaluation always scores every token.
"""
import dataclasses
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from txl_tf.inference import evaluation
from txl_tf.training.distribute import local_replicas
from txl_tf.training.replica_step import ReplicaStep
from txl_tf.training.step_settings import StepSettings

SUM = tf.distribute.ReduceOp.SUM


@dataclasses.dataclass
class LoopStats:
    """What one call of `Trainer.train` or `Trainer.evaluate` measured (host numbers)."""
    steps: int
    nll_sum: float      # summed NLL (nats) over all target tokens of all replicas
    tokens: float       # number of target tokens of all replicas
    grad_norm_sum: float = 0.0  # sum over steps of the pre-clip global gradient norm
    last_grad_norm: float = 0.0
    skipped_steps: int = 0      # mixed_float16 steps skipped for non-finite gradients

    @property
    def loss(self) -> float:
        return self.nll_sum / max(self.tokens, 1.0)


class Trainer:
    """The training and evaluation loops of a `TransformerXL` under a `tf.distribute.Strategy`;
    each training step is its `replica_step` (a `ReplicaStep`) under `strategy.run`.

    Args:
      model, optimizer: created under `strategy.scope()`.
      strategy: the distribution strategy.
      settings: the step's `StepSettings` (`txl_tf.training.replica_step.ReplicaStep`).

    The `step` variable (int64, under the strategy) counts applied training steps.
    """

    def __init__(self, model, optimizer, strategy: tf.distribute.Strategy,
                 settings: StepSettings = StepSettings()):
        self.model = model
        self.strategy = strategy
        with strategy.scope():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.replica_step = ReplicaStep(model, optimizer, strategy, settings)
        self._train_fn = tf.function(self._train_loop)

    @property
    def optimizer(self):
        return self.replica_step.optimizer

    @property
    def loss_scale(self) -> tf.Variable:
        """The dynamic loss scale (float32; checkpointed with the model)."""
        return self.replica_step.loss_scale

    @property
    def good_steps(self) -> tf.Variable:
        """Finite steps since the loss scale last changed (int64; checkpointed)."""
        return self.replica_step.good_steps

    @property
    def xla_mode(self):
        """None (no XLA), `whole`, `gradients` or `tpu` (`step_compilation.compiled_mode`)."""
        return self.replica_step.xla_mode

    # ---------------------------------------------------------------------------------- memory
    @property
    def num_local_replicas(self) -> int:
        return local_replicas(self.strategy)

    def init_memory(self, per_replica_batch: int, mem_len: Optional[int] = None):
        """Zero memory on every replica: distributed L x [B, M, D]."""
        return self.strategy.experimental_distribute_values_from_function(
            lambda ctx: self.model.init_mems(per_replica_batch, mem_len))

    def memory_to_host(self, mems) -> List[np.ndarray]:
        """L numpy arrays [local_replicas * B, M, D]: local replicas' memory in replica order."""
        return [np.concatenate([t.numpy() for t in self.strategy.experimental_local_results(m)],
                               axis=0) for m in mems]

    def memory_from_host(self, arrays: Sequence[np.ndarray]):
        """Inverse of `memory_to_host`: row block r of each array goes to local replica r."""
        n = self.num_local_replicas
        arrays = [np.asarray(a, np.float32) for a in arrays]
        for a in arrays:
            if a.shape[0] % n:
                raise ValueError(f"memory of {a.shape[0]} rows cannot be split over {n} local "
                                 "replicas.")

        def value_fn(ctx):
            local = ctx.replica_id_in_sync_group % n
            rows = arrays[0].shape[0] // n if arrays else 0
            return [tf.constant(a[local * rows:(local + 1) * rows]) for a in arrays]

        return self.strategy.experimental_distribute_values_from_function(value_fn)

    # ---------------------------------------------------------------------------------- loop
    def _as_run_output(self, mems):
        """`mems` in the structure that `strategy.run` returns, as a loop variable must keep
        its structure: with one local replica, MultiWorkerMirroredStrategy returns plain tensors
        where `experimental_distribute_values_from_function` gives one-component PerReplica
        values."""
        return self.strategy.run(lambda m: [tf.identity(x) for x in m], args=(mems,))

    def _train_loop(self, iterator, mems, num_steps):
        strategy = self.strategy
        nll = tf.constant(0.0, tf.float32)
        tokens = tf.constant(0.0, tf.float32)
        norm_sum = tf.constant(0.0, tf.float32)
        last_norm = tf.constant(0.0, tf.float32)
        skipped = tf.constant(0, tf.int64)
        mems = self._as_run_output(mems)
        step_fn = self.replica_step.function
        for _ in tf.range(num_steps):
            mems, step_nll, step_tokens, norm, step_skipped = strategy.run(
                step_fn, args=(next(iterator), mems))
            nll += strategy.reduce(SUM, step_nll, axis=None)
            tokens += strategy.reduce(SUM, step_tokens, axis=None)
            # Every replica holds the same reduced norm and skip flag: take them, not the sum.
            last_norm = strategy.reduce(tf.distribute.ReduceOp.MEAN, norm, axis=None)
            norm_sum += last_norm
            skipped += tf.cast(strategy.reduce(tf.distribute.ReduceOp.MEAN, step_skipped,
                                               axis=None), tf.int64)
            self.step.assign_add(1)
        return mems, nll, tokens, norm_sum, last_norm, skipped

    def train(self, iterator, mems, num_steps: int):
        """Run `num_steps` training steps in one compiled loop.

        Args:
          iterator: iterator over the distributed training dataset ({"inputs","labels"} int32
            [B, Q] per replica).
          mems: distributed memory (`init_memory`, `memory_from_host` or the previous call's).
        Returns:
          (mems after the last step, LoopStats).
        """
        mems, nll, tokens, norm_sum, last_norm, skipped = self._train_fn(
            iterator, mems, tf.constant(num_steps, tf.int32))
        return mems, LoopStats(steps=int(num_steps), nll_sum=float(nll), tokens=float(tokens),
                               grad_norm_sum=float(norm_sum), last_grad_norm=float(last_norm),
                               skipped_steps=int(skipped))

    # ------------------------------------------------------------------------------ evaluation
    @property
    def _evaluator(self) -> evaluation.Evaluator:
        """The evaluation loop of this model and strategy (the model config's run settings)."""
        if getattr(self, "_evaluation", None) is None:
            self._evaluation = evaluation.Evaluator(self.model, strategy=self.strategy)
        return self._evaluation

    def evaluate(self, iterator, per_replica_batch: int, num_steps: int = -1) -> LoopStats:
        """Token-weighted NLL over `num_steps` steps (-1: until the iterator ends), starting
        from zero memory (the training memory is not touched). Dropout is off."""
        result = self._evaluator.run(iterator, per_replica_batch, num_steps)
        return LoopStats(steps=result.steps, nll_sum=result.nll_sum, tokens=float(result.tokens))
