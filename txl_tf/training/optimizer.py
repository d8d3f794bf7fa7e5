"""Adam for a custom loop that all-reduces and clips the gradients itself.

Keras 3's TensorFlow optimizers sum the gradients across replicas inside `apply` (replica
context) and apply `global_clipnorm` BEFORE that sum, i.e. to each replica's local gradients.
txl-tf wants the reference GPU semantics instead: one all-reduce, then one global-norm clip of the
reduced gradient. `PreReducedAdam` therefore expects gradients that are already the cross-replica
sum and skips Keras' own all-reduce (nothing else changes: same Adam update, same slots, same
checkpoint layout as `keras.optimizers.Adam`).
"""
import keras

_HOOK = "_all_reduce_sum_gradients"


class PreReducedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose `apply` takes already all-reduced gradients."""

    def __init__(self, *args, **kwargs):
        if not hasattr(keras.optimizers.Adam, _HOOK):
            raise RuntimeError(
                f"this Keras version ({keras.__version__}) has no Optimizer.{_HOOK}; "
                "txl_tf/training/optimizer.py must be adapted to its gradient aggregation.")
        super().__init__(*args, **kwargs)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return list(grads_and_vars)


def make_optimizer(learning_rate) -> PreReducedAdam:
    """The reference optimizer: Adam(beta1 0.9, beta2 0.999, epsilon 1e-8), no weight decay.

    Args:
      learning_rate: a float or a `keras.optimizers.schedules.LearningRateSchedule`
        (e.g. `txl_tf.training.lr_schedule.WarmupCosineSchedule`) evaluated on `optimizer.iterations`.
    """
    return PreReducedAdam(learning_rate=learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
