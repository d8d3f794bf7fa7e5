"""ReplicaDropout: independent masks per replica, reproducible from the seed state."""
import numpy as np
import pytest
import tensorflow as tf

from txl_tf.layers.dropout import ReplicaDropout, hash_dropout, random_bits


def test_inverted_dropout_statistics_and_eval_identity():
    layer = ReplicaDropout(0.25, seed=1)
    x = tf.ones([200, 100])
    assert layer(x, training=False) is x
    y = layer(x, training=True).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    # Each call advances the seed: a new mask.
    assert (layer(x, training=True).numpy() != y).any()


def test_same_seed_state_same_mask():
    a, b = ReplicaDropout(0.5, seed=7), ReplicaDropout(0.5, seed=7)
    x = tf.ones([8, 16])
    np.testing.assert_array_equal(a(x, training=True).numpy(), b(x, training=True).numpy())


def test_replicas_draw_different_masks(two_cpu_devices):
    strategy = tf.distribute.MirroredStrategy(two_cpu_devices)
    with strategy.scope():
        layer = ReplicaDropout(0.5, seed=3)
    single = ReplicaDropout(0.5, seed=3)
    x = tf.ones([16, 32])

    @tf.function
    def run():
        return strategy.run(lambda: layer(x, training=True))

    masks = [t.numpy() != 0 for t in strategy.experimental_local_results(run())]
    assert (masks[0] != masks[1]).any(), "both replicas drew the same dropout mask"
    # Replica 0 draws what a single-device layer with the same seed state draws.
    np.testing.assert_array_equal(masks[0], single(x, training=True).numpy() != 0)


@pytest.mark.parametrize("rate", [-0.1, 1.0])
def test_rate_is_validated(rate):
    with pytest.raises(ValueError, match="dropout rate"):
        ReplicaDropout(rate)


def _numpy_bits(size, seed):
    """The documented generator, recomputed with NumPy's wrapping uint32 arithmetic."""
    def mix(x):
        x = x ^ (x >> np.uint32(16))
        x = x * np.uint32(0x7FEB352D)
        x = x ^ (x >> np.uint32(15))
        x = x * np.uint32(0x846CA68B)
        return x ^ (x >> np.uint32(16))
    keys = [np.uint32((int(s) & 0xFFFFFFFF) ^ ((int(s) >> 32) & 0xFFFFFFFF)) for s in seed]
    index = np.arange(size, dtype=np.uint32)
    with np.errstate(over="ignore"):
        return mix(mix(index * np.uint32(0x9E3779B9) + keys[0]) ^ keys[1])


@pytest.mark.parametrize("seed", [(0, 0), (7, 123), (2**40 + 5, 2**33 + 9)])
def test_random_bits_match_an_independent_numpy_hash(seed):
    bits = random_bits([6, 50], tf.constant(seed, tf.int64)).numpy()
    np.testing.assert_array_equal(bits.reshape(-1), _numpy_bits(300, seed))


def test_mask_is_the_same_with_and_without_xla():
    x = tf.random.normal([4, 33, 17])
    seed = tf.constant([3, 11], tf.int64)
    plain = tf.function(lambda x, s: hash_dropout(x, 0.3, s))
    compiled = tf.function(lambda x, s: hash_dropout(x, 0.3, s), jit_compile=True)
    np.testing.assert_array_equal(plain(x, seed).numpy(), compiled(x, seed).numpy())


def test_mask_bits_are_uncorrelated_across_neighbours_and_seeds():
    """Neighbouring units, and the masks of consecutive seeds (consecutive calls of a layer),
    are independent: their correlations are within sampling noise of zero."""
    n = 1 << 16
    a = random_bits([n], tf.constant([5, 1], tf.int64)).numpy() >= 0.5 * 2**32
    b = random_bits([n], tf.constant([5, 2], tf.int64)).numpy() >= 0.5 * 2**32
    noise = 4 / np.sqrt(n)
    assert abs(a.mean() - 0.5) < noise
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < noise
    assert abs(np.corrcoef(a, b)[0, 1]) < noise
    # Every bit position is fair, not just the top one the threshold mostly reads.
    raw = random_bits([n], tf.constant([9, 4], tf.int64)).numpy()
    for bit in range(32):
        assert abs(((raw >> bit) & 1).mean() - 0.5) < noise, bit


def test_keep_threshold_follows_the_rate():
    x = tf.ones([1 << 16])
    for rate in (0.05, 0.5, 0.9):
        kept = (hash_dropout(x, rate, tf.constant([1, 2], tf.int64)).numpy() != 0).mean()
        assert abs(kept - (1 - rate)) < 4 * np.sqrt(rate * (1 - rate) / x.shape[0])
