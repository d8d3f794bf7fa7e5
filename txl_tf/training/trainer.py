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
  * Loss: every replica sums the NLL of its target tokens (labels >= 0) and divides by the total
    number of target tokens of all replicas, so the sum over replicas of the replica losses is the
    global token-weighted mean NLL and the sum of their gradients is its gradient.
  * Half loss (`half_loss=True`, the paper's option for models without memory): only the last
    Q - Q//2 positions of every segment count (`txl_tf.loss_mask.half_loss_mask`), divided by
    the number of counted tokens of all replicas; the memory still carries the whole segment.
    `LoopStats.loss` is then the half-loss mean and `LoopStats.tokens` still counts every target
    token (throughput); evaluation always scores every token.
  * Gradients: each replica's gradients are summed across replicas once (`all_reduce` SUM in
    replica context), the global norm of that sum is clipped to `clip`, and the optimizer
    applies them without reducing again (`optimizer.take_summed_gradients`). With `grad_accum_steps = k` each replica splits its B
    streams into k chunks of B/k streams (each with its own memory rows), accumulates their
    gradients, then reduces and applies once: the same update as the full batch.
  * mixed_float16: dynamic loss scaling (x2 every `growth_interval` finite steps, /2 and the update
    skipped on non-finite gradients); the scale is a checkpointed variable.
  * XLA (`jit_compile`, `txl_tf/training/step_compilation.py`): the whole replica step is one
    `tf.function(jit_compile=True)` (mode `whole`), or only each replica's forward, backward and
    accumulation (`_replica_gradients`, mode `gradients`: MirroredStrategy with CPUs), or the
    step is left to TPUStrategy, which compiles it itself (`tpu`).
"""
import dataclasses
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from txl_tf.inference import evaluation
from txl_tf.loss_mask import half_loss_mask
from txl_tf.training.distribute import local_replicas
from txl_tf.training.optimizer import take_summed_gradients
from txl_tf.training.step_compilation import compiled_mode

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
    """Training and evaluation steps of a `TransformerXL` under a `tf.distribute.Strategy`.

    Args:
      model, optimizer: created under `strategy.scope()`; the optimizer is made to take the
        step's already all-reduced gradients (`txl_tf.training.optimizer.take_summed_gradients`).
      strategy: the distribution strategy.
      clip: max global norm of the reduced gradient (<= 0: no clipping).
      grad_accum_steps: chunks per replica batch whose gradients are accumulated (divides B).
      loss_scaling: dynamic loss scaling (for mixed_float16).
      half_loss: train on the second half of every segment only (see the module docstring).
      initial_loss_scale, growth_interval: loss scaling settings.
      jit_compile: compile the step with XLA (how: `step_compilation.compiled_mode` of the
        strategy; under TPUStrategy the step is compiled either way).

    The `step` variable (int64, under the strategy) counts applied training steps.
    """

    def __init__(self, model, optimizer, strategy: tf.distribute.Strategy, clip: float = 0.25,
                 grad_accum_steps: int = 1, loss_scaling: bool = False,
                 initial_loss_scale: float = 2.0 ** 15, growth_interval: int = 2000,
                 half_loss: bool = False, jit_compile: bool = False):
        if grad_accum_steps < 1:
            raise ValueError(f"grad_accum_steps must be >= 1, got {grad_accum_steps}.")
        self.model = model
        self.optimizer = take_summed_gradients(optimizer)
        self.strategy = strategy
        self.clip = float(clip)
        self.grad_accum_steps = int(grad_accum_steps)
        self.loss_scaling = bool(loss_scaling)
        self.growth_interval = int(growth_interval)
        self.half_loss = bool(half_loss)
        self.xla_mode = compiled_mode(strategy) if jit_compile else None
        self._compiled = {}
        with strategy.scope():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
            agg = dict(synchronization=tf.VariableSynchronization.ON_WRITE,
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            self.loss_scale = tf.Variable(initial_loss_scale, dtype=tf.float32,
                                          trainable=False, name="loss_scale", **agg)
            self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False,
                                          name="good_steps", **agg)
            if not optimizer.built:
                optimizer.build(model.trainable_variables)
        self._train_fn = tf.function(self._train_loop)

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

    # ----------------------------------------------------------------------------------- steps
    def _loss_weights(self, labels):
        """float32 [B, Q]: 1 where a training token counts in the loss."""
        if self.half_loss:
            return half_loss_mask(labels, labels)
        return tf.cast(labels >= 0, tf.float32)

    def _forward(self, inputs, labels, mems, training, weights=None):
        mask = tf.cast(labels >= 0, tf.float32) if weights is None else weights
        out = self.model(inputs, mems=mems, labels=tf.maximum(labels, 0), training=training)
        nll_sum = tf.reduce_sum(tf.cast(out["nll"], tf.float32) * mask)
        return out["mems"], nll_sum

    def _compiled_function(self, name):
        """The method `name`, once wrapped in `tf.function(jit_compile=True)`."""
        if name not in self._compiled:
            self._compiled[name] = tf.function(getattr(self, name), jit_compile=True)
        return self._compiled[name]

    def _step_function(self):
        """What `strategy.run` runs each step: the replica step, compiled whole by XLA in mode
        `whole`."""
        if self.xla_mode == "whole":
            return self._compiled_function("_replica_train_step")
        return self._replica_train_step

    def replica_train_step(self, batch, mems):
        """One training step of one replica, in replica context (what `train` runs under
        `strategy.run` each step): forward, backward, cross-replica sum, clip, apply.

        Args:
          batch: {"inputs", "labels"} int32 [B, Q]; mems: L x float32 [B, M, D].

        Returns:
          (new memory L x [B, M, D], this replica's summed NLL, its target tokens, the pre-clip
          global norm of the summed gradient, 1.0 if the update was skipped else 0.0).
        """
        return self._step_function()(batch, mems)

    def _replica_gradients(self, batch, mems, weights, counted):
        """One replica's forward and backward, accumulated over `grad_accum_steps` chunks.

        Args:
          batch: {"inputs", "labels"} int32 [B, Q]; mems: L x [B, M, D] or None.
          weights: float32 [B, Q] loss weights; counted: the weighted tokens of all replicas.
        Returns:
          (gradients of (sum of weighted NLL) / counted (x the loss scale), this replica's
          summed weighted NLL, the new memory L x [B, M, D]).
        """
        inputs, labels = batch["inputs"], batch["labels"]
        variables = self.model.trainable_variables
        k = self.grad_accum_steps
        batch_size = inputs.shape[0]
        if batch_size is not None and batch_size % k:
            raise ValueError(f"grad_accum_steps={k} must divide the per-replica batch "
                             f"({batch_size}).")
        chunk = (batch_size or tf.shape(inputs)[0]) // k
        grads, nll_total, chunk_mems = None, 0.0, []
        for i in range(k):
            rows = slice(i * chunk, (i + 1) * chunk)
            part_mems = None if mems is None else [m[rows] for m in mems]
            with tf.GradientTape() as tape:
                new_mems, nll_sum = self._forward(inputs[rows], labels[rows], part_mems, True,
                                                  weights[rows])
                loss = nll_sum / counted
                if self.loss_scaling:
                    loss = loss * self.loss_scale
            part = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
            grads = part if grads is None else [a + b for a, b in zip(grads, part)]
            nll_total += nll_sum
            chunk_mems.append(new_mems)
        new_mems = chunk_mems[0] if k == 1 else [tf.concat(list(ms), 0)
                                                 for ms in zip(*chunk_mems)]
        return grads, nll_total, new_mems

    def _replica_train_step(self, batch, mems):
        ctx = tf.distribute.get_replica_context()
        labels = batch["labels"]
        local_tokens = tf.reduce_sum(tf.cast(labels >= 0, tf.float32))
        global_tokens = tf.maximum(ctx.all_reduce(SUM, local_tokens), 1.0)
        weights = self._loss_weights(labels)
        counted = (tf.maximum(ctx.all_reduce(SUM, tf.reduce_sum(weights)), 1.0)
                   if self.half_loss else global_tokens)
        variables = self.model.trainable_variables
        gradients = (self._compiled_function("_replica_gradients")
                     if self.xla_mode == "gradients" else self._replica_gradients)
        grads, nll_total, new_mems = gradients(batch, mems, weights, counted)
        if self.half_loss:  # the counted mean, reported over all target tokens
            nll_total = nll_total * (global_tokens / counted)
        grads = ctx.all_reduce(SUM, grads)
        if self.loss_scaling:
            grads = [g / self.loss_scale for g in grads]
        norm = tf.linalg.global_norm(grads)
        if self.clip > 0:
            grads, _ = tf.clip_by_global_norm(grads, self.clip, use_norm=norm)
        if self.loss_scaling:
            finite = tf.math.is_finite(norm)
            self._update_loss_scale(finite)
            applied = self._apply_if_finite(grads, variables, finite)
            skipped = tf.cast(1 - applied, tf.float32)
        else:
            self._apply(grads, variables)
            skipped = tf.constant(0.0, tf.float32)
        return new_mems, nll_total, local_tokens, norm, skipped

    def _apply(self, grads, variables):
        self.optimizer.apply(grads, variables)
        return tf.constant(1, tf.int64)

    def _apply_if_finite(self, grads, variables, finite):
        """Apply only when the (identical on every replica) reduced gradient is finite. A
        strategy that synchronises through merge_call (MirroredStrategy) cannot have it inside
        a cond in replica context, so the cond then runs in cross-replica context."""
        skip = lambda: tf.constant(0, tf.int64)  # noqa: E731
        if tf.__internal__.distribute.strategy_supports_no_merge_call():
            return tf.cond(finite, lambda: self._apply(grads, variables), skip)

        def cross_replica(distribution, grads, finite):
            first = distribution.experimental_local_results(finite)[0]

            def apply():
                distribution.extended.call_for_each_replica(self._apply, args=(grads, variables))
                return tf.constant(1, tf.int64)
            return tf.cond(first, apply, skip)

        return tf.distribute.get_replica_context().merge_call(cross_replica, args=(grads, finite))

    def _update_loss_scale(self, finite):
        grow = tf.logical_and(finite, self.good_steps + 1 >= self.growth_interval)
        new_scale = tf.where(finite, tf.where(grow, self.loss_scale * 2.0, self.loss_scale),
                             tf.maximum(self.loss_scale / 2.0, 1.0))
        new_good = tf.where(tf.logical_and(finite, tf.logical_not(grow)), self.good_steps + 1,
                            tf.constant(0, tf.int64))
        self.loss_scale.assign(new_scale)
        self.good_steps.assign(new_good)

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
        step_fn = self._step_function()
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
