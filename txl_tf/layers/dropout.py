"""Dropout whose mask differs between replicas of a `tf.distribute` strategy.

Keras' `Dropout` draws its stateless seed from a `SeedGenerator` whose state is a mirrored
variable under a distribution strategy, so every replica would draw the same mask for its own,
different data. This layer folds the replica's `replica_id_in_sync_group` into that seed: the
masks are independent across replicas, still reproducible from the seed-generator state (which a
training checkpoint saves for exact resume), and identical to a single-device run's on replica 0.

The mask comes from `random_bits`, a keyed integer hash of each element's index: the same mask
with or without XLA and on every device, and cheap where TF's own generators are not (on CPU,
dropout with Philox masks took about a fifth of a training step of the default model).
"""
import keras
import tensorflow as tf

# Odd multiplier that spreads replica ids across the second seed word.
_REPLICA_SEED_STRIDE = 1_000_003

# The mask generator: a counter-based hash (element index -> 32 random bits) keyed by the seed.
_GOLDEN = 0x9E3779B9  # odd: spreads consecutive indices over the 32-bit range
_MIX_1 = 0x7FEB352D  # the two multipliers of Chris Wellons' "lowbias32" integer hash
_MIX_2 = 0x846CA68B


def _replica_id() -> tf.Tensor:
    context = tf.distribute.get_replica_context()
    replica = 0 if context is None else context.replica_id_in_sync_group
    return tf.cast(replica, tf.int64)


def _mix32(x: tf.Tensor) -> tf.Tensor:
    """lowbias32: a bijection of uint32 in which every input bit flips every output bit with
    probability ~1/2 (xor-shift, multiply, xor-shift, multiply, xor-shift)."""
    for shift, multiplier in ((16, _MIX_1), (15, _MIX_2)):
        x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(shift, tf.uint32)))
        x = x * tf.constant(multiplier, tf.uint32)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(16, tf.uint32)))


def _fold_to_uint32(seed: tf.Tensor) -> tf.Tensor:
    """int64 [2] seed -> uint32 [2] keys (low word xor high word, so no seed bit is lost)."""
    low = tf.bitwise.bitwise_and(seed, tf.constant(0xFFFFFFFF, tf.int64))
    high = tf.bitwise.bitwise_and(tf.bitwise.right_shift(seed, tf.constant(32, tf.int64)),
                                  tf.constant(0xFFFFFFFF, tf.int64))
    return tf.cast(tf.bitwise.bitwise_xor(low, high), tf.uint32)


def random_bits(shape, seed: tf.Tensor) -> tf.Tensor:
    """uint32 random bits of `shape`, a deterministic function of the int64 [2] `seed`.

    bits[i] = mix(mix(i * golden + key0) ^ key1) for the flat element index i, with `mix` the
    lowbias32 hash. Plain 32-bit integer element-wise ops: XLA fuses and vectorises them on
    CPU, and they give the same bits with or without XLA, on every device (TF's stateless
    generators are Philox outside XLA, whose CPU form is 64-bit multiplies that do not
    vectorise, and ThreeFry has no CPU kernel outside XLA). At most 2**31 - 1 elements.
    """
    keys = _fold_to_uint32(seed)
    index = tf.cast(tf.range(tf.reduce_prod(shape)), tf.uint32)
    inner = _mix32(index * tf.constant(_GOLDEN, tf.uint32) + keys[0])
    return tf.reshape(_mix32(tf.bitwise.bitwise_xor(inner, keys[1])), shape)


def hash_dropout(x: tf.Tensor, rate: float, seed: tf.Tensor) -> tf.Tensor:
    """Inverted dropout: keep x where its random bits are >= rate * 2**32, scaled by 1/(1-rate).

    Args:
      x: any float tensor; rate: in [0, 1); seed: int64 [2].
    Returns:
      a tensor like x. Each unit is kept with probability 1 - rate (to 2**-32).
    """
    threshold = min(int(round(rate * 2.0 ** 32)), 2 ** 32 - 1)
    keep = random_bits(tf.shape(x), seed) >= tf.constant(threshold, tf.uint32)
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
        return hash_dropout(x, self.rate, seed)

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config
