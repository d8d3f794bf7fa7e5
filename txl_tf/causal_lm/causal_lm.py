"""`TransformerXLCausalLM`: a `keras.Model` whose `fit()` trains with the segment-level
recurrence, carrying each replica's memory from batch to batch.

Glossary: B per-replica batch (streams), Q tgt_len, M mem_len, D d_model, L n_layer,
V n_token, R replicas.

Design:
  * `fit(dataset)` takes ordered, contiguous global batches {"inputs", "labels"} (or
    (inputs, labels)) int [R * B, Q]: row b of step t+1 continues row b of step t (the records
    `tf_records` writes with per_replica_batch = R * B, or `tf_records.dataset_from_tokens`).
    Keras hands replica r the rows [r * B, (r + 1) * B). A shuffled dataset, one of
    non-deterministic order or one whose batch size may change is refused before training
    (`ContiguousBatchError`).
  * Memory: per-replica variables (`ReplicaMemory`), one for training and one for evaluation.
    The training memory is carried from step to step and across `fit` calls and epochs; only
    `reset_memory()` (or the `ResetMemoryAtEpochStart` callback) zeroes it. `evaluate()` starts
    from zero memory and never touches the training memory, as `Trainer.evaluate`.
  * The step is the one `Trainer` runs (`txl_tf.training.replica_step.ReplicaStep`): the loss
    is the NLL summed over target tokens divided by the target tokens of all replicas, the
    replicas' gradients are summed once, the global norm of that sum is clipped to `clip`, the
    optimizer applies them without summing again; mixed_float16 uses its dynamic loss scaling.
    Keras' loop replaces the `Trainer`'s and `ReplicaMemory` its memory loop variables, so `fit`
    gives the same losses and weights as `txl_tf.training.Trainer` on the same batches.
  * Saved state: `save_weights` (hence `ModelCheckpoint` and `BackupAndRestore`) writes the
    training memory of every local replica ([L, R * B, M, D], replicas in order) and the loss
    scale next to the weights and the optimizer; loading restores them.
  * `steps_per_execution` > 1 runs its steps in one `tf.while_loop` (`multi_step.py`), which
    MirroredStrategy's replicas can feed (Keras' own `tf.cond` loop they cannot).
"""
import contextlib
import dataclasses
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from txl_tf.causal_lm.adaptation import BackboneAdaptation
from txl_tf.causal_lm.batch_checks import check_batch_dtypes, checked_batch, one_line_error
from txl_tf.causal_lm.arguments import COMPILE_RANGES, FIT_RANGES, check_arguments
from txl_tf.causal_lm.contiguous_batches import ContiguousBatchError, check_contiguous
from txl_tf.causal_lm.multi_step import multi_step_function
from txl_tf.causal_lm.replica_memory import ReplicaMemory
from txl_tf.causal_lm.training_state import read_training_state, write_training_state
from txl_tf.causal_lm.task_methods import CausalLMTaskMethods, compile_sampler, sampler_config
from txl_tf.inference.evaluation import Evaluator
from txl_tf.training.replica_step import ReplicaStep
from txl_tf.training.step_settings import StepSettings

SUM = tf.distribute.ReduceOp.SUM


@contextlib.contextmanager
def _batch_errors_in_one_line():
    """A failed check of `checked_batch` as one `CausalLMInputError` line."""
    try:
        yield
    except tf.errors.InvalidArgumentError as error:
        problem = one_line_error(error)
        if problem is None:
            raise
        raise problem from None


def _check_backup(callbacks, steps_per_epoch):
    """`BackupAndRestore` resumes at the start of the epoch it saved, and `fit` starts the
    dataset from its first batch: exact only when every epoch is one whole pass.

    Raises:
      ValueError: a `BackupAndRestore` saving mid-epoch or epochs of `steps_per_epoch` steps.
    """
    for callback in callbacks or []:
        if not isinstance(callback, keras.callbacks.BackupAndRestore):
            continue
        if callback.save_freq != "epoch":
            raise ValueError(
                f"BackupAndRestore(save_freq={callback.save_freq}) would resume an epoch from its "
                "first batch with the memory of a later one; use save_freq='epoch'.")
        if steps_per_epoch:
            raise ValueError(
                "BackupAndRestore with steps_per_epoch would resume at the dataset's first batch "
                "with the memory of a later one; make every epoch one whole pass over the "
                "dataset and leave steps_per_epoch out.")


@keras.saving.register_keras_serializable(package="txl_tf")
class TransformerXLCausalLM(CausalLMTaskMethods, BackboneAdaptation, keras.Model):
    """Transformer-XL as a Keras causal language model: `compile`, then `fit` over contiguous
    batches with the memory carried from batch to batch; generate, presets and export are
    keras-hub's methods (`task_methods.py`).

    Args:
      backbone: a `txl_tf.TransformerXL` (created under the strategy's scope, as this model).
      preprocessor: what turns strings into ids and back, or None.

    Call arguments:
      token_ids: int [B, Q] ids (or a dict with "inputs").
      mems: L float32 [B, M, D], or None for the zero memory of `backbone.init_mems`.
      training: dropout on/off.
      return_memory: also return the new memory.

    Returns:
      float32 [B, Q, V] log-probabilities of the next token, or (log-probabilities, new memory
      L x [B, M, D]) with `return_memory`.

    Example:
      >>> lm = TransformerXLCausalLM(txl_tf.TransformerXL(config))
      >>> lm.compile(optimizer=keras.optimizers.Adam(2.5e-4), clip=0.25)
      >>> data = tf_records.dataset_from_tokens(tokens, per_replica_batch=8, tgt_len=64)
      >>> history = lm.fit(data, epochs=3, callbacks=[keras.callbacks.TensorBoard("logs")])
      >>> lm.evaluate(valid_data)     # the token-weighted mean NLL, from zero memory
    """

    def __init__(self, backbone, preprocessor=None, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        c = backbone.config
        self.memory = ReplicaMemory(c.n_layer, c.mem_len, c.d_model, name="memory")
        self.eval_memory = ReplicaMemory(c.n_layer, c.mem_len, c.d_model, name="eval_memory")
        self._replica_step: Optional[ReplicaStep] = None
        self._evaluator: Optional[Evaluator] = None
        self.sampler = compile_sampler(None)  # generate()'s default until compile(sampler=)
        self.built = True

    def call(self, token_ids, mems=None, training=False, return_memory=False):
        if isinstance(token_ids, dict):
            token_ids = token_ids["inputs"]
        token_ids = tf.cast(token_ids, tf.int32)
        if mems is None:
            mems = self.backbone.init_mems(tf.shape(token_ids)[0])
        out = self.backbone(token_ids, mems=list(mems), training=training)
        if return_memory:
            return out["log_probs"], out["mems"]
        return out["log_probs"]

    # ------------------------------------------------------------------------------ compile
    def compile(self, optimizer="adam", clip: float = 0.25, half_loss: bool = False,
                loss_scaling: Optional[bool] = None, initial_loss_scale: float = 2.0 ** 15,
                growth_interval: int = 2000, grad_accum_steps: int = 1, jit_compile=False,
                sampler="greedy", **kwargs):
        """Configures training; the loss is the model's own (the mean NLL of target tokens).

        Args:
          optimizer: a Keras optimizer or its name. It receives gradients already summed over
            the replicas and clipped, and applies them as they are
            (`txl_tf.training.optimizer.take_summed_gradients`); it must not clip itself.
          clip: max global norm of the replica-summed gradient (<= 0: no clipping).
          half_loss: train on the last Q - Q // 2 positions of every segment only.
          loss_scaling: dynamic loss scaling (default: when the backbone's dtype policy is
            mixed_float16); initial_loss_scale, growth_interval: its settings.
          grad_accum_steps: chunks of each replica batch whose gradients are accumulated.
          jit_compile: compile each replica's step with XLA (as the `Trainer`'s jit_compile).
          sampler: generate()'s default sampler: "greedy", "top_k", "top_p", "random" or a
            `Sampler` (keras-hub's compile(sampler=...)).
          **kwargs: the other arguments of `keras.Model.compile` (steps_per_execution,
            run_eagerly); not loss or metrics.
        """
        check_arguments("compile", dict(kwargs, clip=clip, initial_loss_scale=initial_loss_scale,
                                        growth_interval=growth_interval,
                                        grad_accum_steps=grad_accum_steps), COMPILE_RANGES)
        for name in ("loss", "loss_weights", "metrics", "weighted_metrics"):
            if kwargs.get(name) is not None:
                raise ValueError(f"compile({name}=...) is not supported: the loss is the "
                                 "model's mean NLL per target token; leave it out.")
        sampler = compile_sampler(sampler)
        super().compile(optimizer=optimizer, jit_compile=False, auto_scale_loss=False, **kwargs)
        if loss_scaling is None:
            loss_scaling = self.backbone.dtype_policy.name == "mixed_float16"
        strategy = self.distribute_strategy
        self._step_settings = StepSettings(
            clip=clip, half_loss=half_loss, loss_scaling=loss_scaling,
            initial_loss_scale=initial_loss_scale, growth_interval=growth_interval,
            grad_accum_steps=grad_accum_steps, jit_compile=bool(jit_compile))
        self._replica_step = ReplicaStep(self.backbone, self.optimizer, strategy,
                                         self._step_settings)
        self._evaluator = Evaluator(self.backbone, strategy=strategy)
        self.sampler = sampler

    def get_compile_config(self):
        """What `compile_from_config` needs to compile again (a `.keras` file keeps it)."""
        if self._replica_step is None:
            return None
        return {"optimizer": keras.optimizers.serialize(self.optimizer),
                "steps_per_execution": self.steps_per_execution,
                "run_eagerly": self.run_eagerly, "sampler": sampler_config(self.sampler),
                **dataclasses.asdict(self._step_settings)}

    def compile_from_config(self, config):
        config = dict(config)
        self.compile(optimizer=keras.optimizers.deserialize(config.pop("optimizer")), **config)

    # -------------------------------------------------------------------------------- steps
    def _report(self, nll_sum, tokens, **extra):
        """The logs of a step: "loss", the token-weighted mean NLL of all replicas so far."""
        nll_sum, tokens = tf.distribute.get_replica_context().all_reduce(SUM, [nll_sum, tokens])
        self._loss_tracker.update_state(tf.math.divide_no_nan(nll_sum, tokens),
                                        sample_weight=tokens)
        return {"loss": self._loss_tracker.result(), **extra}

    def train_step(self, data):
        """One replica's step on its rows of the batch, its memory read and replaced."""
        new_mems, nll_sum, tokens, norm, _ = self._replica_step(
            checked_batch(data, self.backbone.config.n_token), self.memory.read())
        self.memory.write(new_mems)
        return self._report(nll_sum, tokens, grad_norm=norm)

    def test_step(self, data):
        """One replica's scoring of its rows with the evaluation memory (no dropout)."""
        new_mems, nll_sum, tokens = self._evaluator.replica_step(
            checked_batch(data, self.backbone.config.n_token), self.eval_memory.read())
        self.eval_memory.write(new_mems)
        return self._report(nll_sum, tokens)

    # ------------------------------------------------------------------ steps_per_execution
    def make_train_function(self, force=False):
        if self.steps_per_execution == 1 or self.run_eagerly:
            return super().make_train_function(force)
        if self.train_function is None or force:
            self.train_function = multi_step_function(self.distribute_strategy, self.train_step,
                                                      self.steps_per_execution)
        return self.train_function

    def make_test_function(self, force=False):
        if self.steps_per_execution == 1 or self.run_eagerly:
            return super().make_test_function(force)
        if self.test_function is None or force:
            self.test_function = multi_step_function(self.distribute_strategy, self.test_step,
                                                     self.steps_per_execution)
        return self.test_function

    # ---------------------------------------------------------------------------- fit/evaluate
    def _streams(self, dataset, y):
        """The per-replica batch of `dataset` (checked: contiguous, fixed batch size)."""
        if y is not None:
            raise ContiguousBatchError("fit() and evaluate() take the labels inside the "
                                       "dataset; pass y=None.")
        streams = check_contiguous(dataset, self.distribute_strategy.num_replicas_in_sync)
        check_batch_dtypes(dataset.element_spec)
        return streams

    def _prepare_evaluation(self, dataset, y=None):
        if self.eval_memory.ensure(self._streams(dataset, y), self.distribute_strategy):
            self.test_function = None  # traced on the previous variable

    def fit(self, x=None, y=None, validation_data=None, **kwargs):
        """`keras.Model.fit` over a dataset of contiguous batches (see the module docstring);
        the memory continues from the previous call.

        Raises:
          ContiguousBatchError: a dataset that would break the recurrence.
          ValueError: a `BackupAndRestore` that could not resume exactly (see `_check_backup`).
        """
        self._require_compiled("fit")
        check_arguments("fit", kwargs, FIT_RANGES)
        _check_backup(kwargs.get("callbacks"), kwargs.get("steps_per_epoch"))
        streams = self._streams(x, y)
        if self.memory.streams not in (None, streams):
            raise ContiguousBatchError(
                f"the memory holds {self.memory.streams} streams per replica but the dataset "
                f"has {streams}; keep the batch size, or call reset_memory(keep_streams=False) "
                "to start new streams.")
        if self.memory.ensure(streams, self.distribute_strategy):
            self.train_function = None  # traced on the previous variable
        if validation_data is not None:
            self._prepare_evaluation(validation_data)
        kwargs.setdefault("shuffle", False)  # a dataset is never shuffled by Keras anyway
        with _batch_errors_in_one_line():
            return super().fit(x, validation_data=validation_data, **kwargs)

    def evaluate(self, x=None, y=None, **kwargs):
        """`keras.Model.evaluate` from zero memory; returns the token-weighted mean NLL."""
        self._require_compiled("evaluate")
        check_arguments("evaluate", kwargs, FIT_RANGES)
        if not kwargs.get("_use_cached_eval_dataset"):
            self._prepare_evaluation(x, y)
        self.eval_memory.reset()
        with _batch_errors_in_one_line():
            return super().evaluate(x, **kwargs)

    def _require_compiled(self, method):
        if self._replica_step is None:
            raise ValueError(f"{method}() needs compile() first: "
                             "lm.compile(optimizer=keras.optimizers.Adam(2.5e-4)).")

    def reset_memory(self, keep_streams: bool = True):
        """Zeroes the training memory of every replica; `keep_streams=False` forgets it
        altogether, so that the next `fit` may use another batch size."""
        if not keep_streams:
            self.memory = ReplicaMemory(*self.memory.shape, name=self.memory.name)
            self.train_function = None
        else:
            self.memory.reset()

    def memory_to_host(self) -> Optional[np.ndarray]:
        """float32 [L, R * B, M, D]: the training memory, local replicas in order (None before
        the first `fit`)."""
        return None if self.memory.variable is None else self.memory.to_host()

    # ------------------------------------------------------------------------- saved state
    def save_own_variables(self, store):
        """Writes the training memory and the loss-scaling state (the weights are the
        backbone's and the optimizer's own); see `training_state.py`."""
        write_training_state(self.memory, self._replica_step, store)

    def load_own_variables(self, store):
        """Restores what `save_own_variables` wrote (the memory of every local replica)."""
        if read_training_state(self.memory, self._replica_step, store,
                               self.distribute_strategy):
            self.train_function = None  # traced on the previous variable

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "backbone": keras.saving.serialize_keras_object(self.backbone)}
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(
                config["preprocessor"])
        return cls(**config)
