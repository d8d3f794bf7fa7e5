"""`ReplicaStep`: one replica's training step, the one both front ends run.

Glossary: B per-replica batch (streams), Q tgt_len, M mem_len, D d_model, L n_layer, R replicas.

`Trainer` runs it under `strategy.run` inside its compiled multi-step loop and carries the memory
as loop variables; `TransformerXLCausalLM.fit` runs it from Keras' `train_step` and carries the
memory in per-replica variables (`ReplicaMemory`). Everything a step does to the model, the
optimizer and the loss scale is here, so the two give the same losses and weights:

  * Loss: every replica sums the NLL of its target tokens (labels >= 0) and divides by the total
    number of target tokens of all replicas, so the sum over replicas of the replica losses is the
    global token-weighted mean NLL and the sum of their gradients is its gradient.
  * Half loss (`half_loss=True`, the paper's option for models without memory): only the last
    Q - Q//2 positions of every segment count (`txl_tf.loss.half_loss.half_loss_mask`), divided by
    the number of counted tokens of all replicas; the memory still carries the whole segment, and
    the reported NLL is the counted mean scaled to all target tokens.
  * Gradients: each replica's gradients are summed across replicas once (`all_reduce` SUM in
    replica context), the global norm of that sum is clipped to `clip`, and the optimizer applies
    them without reducing again (`optimizer.take_summed_gradients`, applied here). With
    `grad_accum_steps = k` each replica splits its B streams into k chunks of B/k streams (each
    with its own memory rows), accumulates their gradients, then reduces and applies once: the
    same update as the full batch.
  * mixed_float16: dynamic loss scaling (x2 every `growth_interval` finite steps, /2 and the
    update skipped on non-finite gradients); the scale and its count of finite steps are
    variables (`loss_scale`, `good_steps`) that the caller checkpoints.
  * XLA (`jit_compile`, `txl_tf/devices/step_compilation.py`): the whole step is one
    `tf.function(jit_compile=True)` (mode `whole`), or only the forward, backward and
    accumulation (`gradients`, mode `gradients`), or TPUStrategy compiles it itself (`tpu`).
"""
from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from txl_tf.loss.half_loss import half_loss_mask
from txl_tf.training.optimizer import take_summed_gradients
from txl_tf.training.step_settings import StepSettings
from txl_tf.devices.step_compilation import compiled_mode

SUM = tf.distribute.ReduceOp.SUM


class ReplicaStep:
    """One training step of one replica of a `TransformerXL` under a `tf.distribute.Strategy`.

    Args:
      model, optimizer: created under `strategy.scope()`; the optimizer is made to take the
        step's already all-reduced gradients (`txl_tf.training.optimizer.take_summed_gradients`).
      strategy: the distribution strategy (the loss-scale variables are created under it).
      settings: the `StepSettings`: clipping, gradient accumulation, loss scaling, half loss
        (see the module docstring) and XLA (how: `step_compilation.compiled_mode` of the
        strategy; under TPUStrategy the step is compiled either way).

    Call arguments (in replica context, e.g. under `strategy.run`):
      batch: {"inputs", "labels"} int32 [B, Q] (labels < 0: not a target).
      mems: this replica's memory, L x float32 [B, M, D].

    Returns:
      (new memory L x [B, M, D], this replica's summed NLL (float32 scalar), its target tokens
      (float32 scalar), the pre-clip global norm of the replica-summed gradient (the same on
      every replica), 1.0 if the update was skipped for non-finite gradients else 0.0).
    """

    def __init__(self, model, optimizer, strategy: tf.distribute.Strategy,
                 settings: StepSettings = StepSettings()):
        self.model = model
        self.optimizer = take_summed_gradients(optimizer)
        self.settings = settings
        self.clip = float(settings.clip)
        self.grad_accum_steps = int(settings.grad_accum_steps)
        self.loss_scaling = bool(settings.loss_scaling)
        self.growth_interval = int(settings.growth_interval)
        self.half_loss = bool(settings.half_loss)
        self.xla_mode = compiled_mode(strategy) if settings.jit_compile else None
        self._compiled: Dict[str, tf.types.experimental.GenericFunction] = {}
        with strategy.scope():
            agg = dict(synchronization=tf.VariableSynchronization.ON_WRITE,
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            self.loss_scale = tf.Variable(settings.initial_loss_scale, dtype=tf.float32,
                                          trainable=False, name="loss_scale", **agg)
            self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False,
                                          name="good_steps", **agg)
            if not optimizer.built:
                optimizer.build(model.trainable_variables)

    def __call__(self, batch, mems):
        return self.function(batch, mems)

    @property
    def function(self):
        """What `strategy.run` runs each step: `step`, compiled whole by XLA in mode `whole`."""
        if self.xla_mode == "whole":
            return self._compiled_function("step")
        return self.step

    def _compiled_function(self, name):
        """The method `name`, once wrapped in `tf.function(jit_compile=True)`."""
        if name not in self._compiled:
            self._compiled[name] = tf.function(getattr(self, name), jit_compile=True)
        return self._compiled[name]

    # ------------------------------------------------------------------------------- the step
    def step(self, batch, mems):
        """The step as TensorFlow ops (what mode `whole` compiles): token counts, forward and
        backward (`gradients`), cross-replica sum, unscale, clip, loss scale update, apply.
        Arguments and results: see the class docstring."""
        ctx = tf.distribute.get_replica_context()
        labels = batch["labels"]
        local_tokens = tf.reduce_sum(tf.cast(labels >= 0, tf.float32))
        global_tokens = tf.maximum(ctx.all_reduce(SUM, local_tokens), 1.0)
        weights = self._loss_weights(labels)
        counted = (tf.maximum(ctx.all_reduce(SUM, tf.reduce_sum(weights)), 1.0)
                   if self.half_loss else global_tokens)
        variables = self.model.trainable_variables
        gradients = (self._compiled_function("gradients")
                     if self.xla_mode == "gradients" else self.gradients)
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

    def _loss_weights(self, labels):
        """float32 [B, Q]: 1 where a training token counts in the loss."""
        if self.half_loss:
            return half_loss_mask(labels, labels)
        return tf.cast(labels >= 0, tf.float32)

    def _forward(self, inputs, labels, mems, weights):
        """(new memory L x [B, M, D], the weighted NLL sum) of one chunk, dropout on."""
        out = self.model(inputs, mems=mems, labels=tf.maximum(labels, 0), training=True)
        nll_sum = tf.reduce_sum(tf.cast(out["nll"], tf.float32) * weights)
        return out["mems"], nll_sum

    def gradients(self, batch, mems, weights, counted
                  ) -> Tuple[List[tf.Tensor], tf.Tensor, List[tf.Tensor]]:
        """This replica's forward and backward, accumulated over `grad_accum_steps` chunks
        (what mode `gradients` compiles).

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
        grads: Optional[List[tf.Tensor]] = None
        nll_total, chunk_mems = 0.0, []
        for i in range(k):
            rows = slice(i * chunk, (i + 1) * chunk)
            part_mems = None if mems is None else [m[rows] for m in mems]
            with tf.GradientTape() as tape:
                new_mems, nll_sum = self._forward(inputs[rows], labels[rows], part_mems,
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

    # ------------------------------------------------------------------------ apply, scaling
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
