"""ReplicaDropout: independent masks per replica, reproducible from the seed state."""
import numpy as np
import pytest
import tensorflow as tf

from txl_tf.dropout import ReplicaDropout


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
