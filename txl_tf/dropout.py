"""Dropout whose mask differs between replicas of a `tf.distribute` strategy.

Keras' `Dropout` draws its stateless seed from a `SeedGenerator` whose state is a mirrored
variable under a distribution strategy, so every replica would draw the same mask for its own,
different data. This layer folds the replica's `replica_id_in_sync_group` into that seed: the
masks are independent across replicas, still reproducible from the seed-generator state (which a
training checkpoint saves for exact resume), and identical to a single-device run's on replica 0.
"""
import keras
import tensorflow as tf

try:  # Whether a graph is being compiled by XLA (tf.function(jit_compile=True), TPU).
    from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext as _in_xla
except ImportError:  # pragma: no cover - a TF without it just keeps the default generator
    _in_xla = None

# Odd multiplier that spreads replica ids across the second seed word.
_REPLICA_SEED_STRIDE = 1_000_003


def _replica_id() -> tf.Tensor:
    context = tf.distribute.get_replica_context()
    replica = 0 if context is None else context.replica_id_in_sync_group
    return tf.cast(replica, tf.int64)


def _threefry_dropout(x, rate, seed):
    """`stateless_dropout` with the mask drawn by ThreeFry: what XLA compiles on CPU.

    XLA lowers the default (Philox) stateless generator on CPU to 64-bit multiplies that do not
    vectorise; ThreeFry is 32-bit adds, rotations and xors. In the issue-7 training step the
    Philox masks took about a fifth of the step; ThreeFry makes dropout nearly free. Same
    semantics: keep where uniform >= rate, scale kept units by 1 / (1 - rate); the masks are a
    deterministic function of the seed (only a different generator than outside XLA, where
    TF's CPU kernels have no ThreeFry).
    """
    keep = tf.random.stateless_uniform(tf.shape(x), seed=seed, alg="threefry") >= rate
    return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros_like(x))


@keras.saving.register_keras_serializable(package="txl_tf")
class ReplicaDropout(keras.layers.Layer):
    """Inverted dropout with a per-replica mask.

    Args:
      rate: fraction of units dropped, in [0, 1).
      seed: optional int seed of the layer's `SeedGenerator`.

    Call arguments:
      x: any float tensor; training: drop only when True.

    Returns:
      x with units zeroed with probability `rate` and the rest scaled by 1 / (1 - rate).
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
        self.rate = float(rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        seed = tf.cast(self.seed_generator.next(), tf.int64)
        seed = seed + tf.stack([tf.constant(0, tf.int64), _replica_id() * _REPLICA_SEED_STRIDE])
        if _in_xla is not None and _in_xla(tf.compat.v1.get_default_graph()):
            return _threefry_dropout(x, self.rate, seed)
        return tf.nn.experimental.stateless_dropout(x, rate=self.rate, seed=seed)

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config
