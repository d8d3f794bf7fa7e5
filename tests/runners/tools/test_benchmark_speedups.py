"""The model's speed optimisations (issue 7) keep its maths: each one against an independent
computation. No timing assertions (the figures live in runners/tools/benchmark.py)."""
import numpy as np
import tensorflow as tf

import txl_tf
from txl_tf.layers.dropout import ReplicaDropout


def test_xla_dropout_statistics_scale_and_determinism():
    """Under XLA the dropout mask (the hashed counter) is still inverted dropout at `rate`."""
    rate = 0.3
    layer = ReplicaDropout(rate, seed=5)
    x = tf.ones([64, 512])

    @tf.function(jit_compile=True)
    def drop(x):
        return layer(x, training=True)

    state = layer.seed_generator.state.numpy()
    first = drop(x).numpy()
    kept = first != 0
    assert abs(1.0 - kept.mean() - rate) < 0.01
    np.testing.assert_allclose(first[kept], 1.0 / (1.0 - rate), rtol=1e-6)
    second = drop(x).numpy()
    assert (second != first).any()  # the seed generator advanced: a new mask
    layer.seed_generator.state.assign(state)
    np.testing.assert_array_equal(drop(x).numpy(), first)  # same seed state, same mask
    # Rows are not copies of each other (the counter covers the whole tensor).
    assert len({row.tobytes() for row in kept}) == kept.shape[0]

    @tf.function(jit_compile=True)
    def no_drop(x):
        return layer(x, training=False)

    np.testing.assert_array_equal(no_drop(x).numpy(), x.numpy())
