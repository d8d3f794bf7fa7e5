"""Keras optimizers for a step that all-reduces and clips the gradients itself.

Keras 3's TensorFlow optimizers sum the gradients across replicas inside `apply` (replica
context) and apply `global_clipnorm` BEFORE that sum, i.e. to each replica's local gradients.
txl-tf wants the reference GPU semantics instead: one all-reduce, then one global-norm clip of the
reduced gradient. `take_summed_gradients` is the one place that makes a Keras optimizer apply
gradients that are already the cross-replica sum as they are (nothing else changes: same update,
same slots, same checkpoint layout); `make_optimizer` applies it, and `ReplicaStep` applies it
again (it changes nothing twice) to whatever optimizer it is given, so the custom loop and
`TransformerXLCausalLM.fit` share it.
"""
import keras

_HOOK = "_all_reduce_sum_gradients"


def _as_given(grads_and_vars):
    """The gradients as given: the step has summed them across replicas already."""
    return list(grads_and_vars)


def take_summed_gradients(optimizer):
    """Makes `optimizer` apply already replica-summed, already clipped gradients as they are.

    Args:
      optimizer: a Keras optimizer (not a `LossScaleOptimizer`: the step scales the loss
        itself), without clipping of its own.

    Returns:
      `optimizer`, whose cross-replica sum is replaced by the identity.

    Raises:
      ValueError: the optimizer scales the loss or clips the gradients itself.
      RuntimeError: this Keras version has no hook for its gradient aggregation.
    """
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        raise ValueError("the optimizer is a LossScaleOptimizer; pass the inner optimizer: "
                         "the training step scales the loss itself (loss_scaling=True).")
    if any(getattr(optimizer, name, None) for name in ("clipnorm", "global_clipnorm",
                                                       "clipvalue")):
        raise ValueError("the optimizer clips the gradients itself; leave that out and set the "
                         "step's clip (compile(clip=...), --clip), which clips the global norm "
                         "of the replica-summed gradient.")
    if not hasattr(optimizer, _HOOK):
        raise RuntimeError(f"this Keras version ({keras.__version__}) has no Optimizer.{_HOOK}; "
                           "txl_tf/training/optimizer.py must be adapted to its gradient "
                           "aggregation.")
    setattr(optimizer, _HOOK, _as_given)
    return optimizer


def make_optimizer(learning_rate) -> keras.optimizers.Adam:
    """The reference optimizer: Adam(beta1 0.9, beta2 0.999, epsilon 1e-8), no weight decay,
    applying already replica-summed gradients (`take_summed_gradients`).

    Args:
      learning_rate: a float or a `keras.optimizers.schedules.LearningRateSchedule`
        (e.g. `txl_tf.training.lr_schedule.WarmupCosineSchedule`) evaluated on `optimizer.iterations`.
    """
    return take_summed_gradients(keras.optimizers.Adam(
        learning_rate=learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-8))
