"""`ReplicaStep` (`txl_tf/training/replica_step.py`), the replica training step that `Trainer`
and `TransformerXLCausalLM.fit` both run, against an independent computation: one step of plain
SGD on the token-weighted mean NLL (padded labels left out), its gradient taken by a tape of our
own over the model's output. Gradient accumulation and loss scaling must give that same update;
the clip scales it to the clip norm; a non-finite gradient skips it and halves the scale.
(That both front ends run it, with the same results, is tests/causal_lm/test_fit_equals_trainer.py.)
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from txl_tf.training.replica_step import ReplicaStep
from txl_tf.training.step_settings import StepSettings

from tiny import stream_batches, tiny_config, tiny_model

CONFIG = tiny_config()
BATCH, LR = 4, 0.1


def batch_and_memory():
    """The last batch of `stream_batches` (padded labels in row 0) and a non-zero memory."""
    batch = {k: tf.constant(v) for k, v in stream_batches(CONFIG, BATCH, 2)[-1].items()}
    rng = np.random.default_rng(1)
    mems = [tf.constant(rng.normal(size=(BATCH, CONFIG.mem_len, CONFIG.d_model)), tf.float32)
            for _ in range(CONFIG.n_layer)]
    return batch, mems


def independent_step(model, batch, mems):
    """(mean NLL over the target tokens, its gradient, the new memory), by our own tape."""
    labels = batch["labels"]
    mask = tf.cast(labels >= 0, tf.float32)
    with tf.GradientTape() as tape:
        out = model(batch["inputs"], mems=mems, labels=tf.maximum(labels, 0), training=True)
        loss = tf.reduce_sum(out["nll"] * mask) / tf.reduce_sum(mask)
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]
    return float(loss), [g.numpy() for g in grads], [m.numpy() for m in out["mems"]]


@pytest.fixture(scope="module")
def want():
    """What one step from seed-0 weights should give (`independent_step` on `batch_and_memory`):
    the loss, its gradient, the new memory and the gradient's norm; read only."""
    loss, grads, mems = independent_step(tiny_model(seed=0), *batch_and_memory())
    return dict(loss=loss, grads=grads, mems=mems,
                norm=float(np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))))


def one_step(nan_memory=False, **settings):
    """One `ReplicaStep` of plain SGD (lr LR) from seed-0 weights (those of `want`);
    `nan_memory`: a NaN in the memory makes the gradient non-finite."""
    model = tiny_model(seed=0)
    batch, mems = batch_and_memory()
    if nan_memory:
        mems[0] = tf.tensor_scatter_nd_update(mems[0], [[0, 0, 0]], [np.nan])
    before = [v.numpy() for v in model.trainable_variables]
    step = ReplicaStep(model, keras.optimizers.SGD(LR), tf.distribute.get_strategy(),
                       StepSettings(**settings))
    new_mems, nll_sum, tokens, norm, skipped = tf.function(step)(batch, mems)
    return dict(loss=float(nll_sum / tokens), norm=float(norm), skipped=float(skipped),
                mems=[m.numpy() for m in new_mems], step=step,
                updates=[b - v.numpy() for b, v in zip(before, model.trainable_variables)])


def assert_update(got, grads, scale=1.0):
    for update, grad in zip(got["updates"], grads):
        np.testing.assert_allclose(update, LR * scale * grad, rtol=1e-3, atol=1e-7)


# Accumulation over 2 chunks of 2 streams: row 0's padded labels make the chunks' token counts
# differ, so a chunk-mean instead of the token-weighted mean would show.
@pytest.mark.parametrize("settings", [
    dict(), dict(grad_accum_steps=2),
    dict(loss_scaling=True, initial_loss_scale=2.0 ** 12, growth_interval=5)],
    ids=["plain", "accumulate_2", "loss_scaling"])
def test_step_is_sgd_on_the_mean_nll(settings, want):
    got = one_step(clip=0.0, **settings)
    np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-6)
    np.testing.assert_allclose(got["norm"], want["norm"], rtol=1e-4)
    assert got["skipped"] == 0.0 and want["norm"] > 0
    assert_update(got, want["grads"])
    for a, b in zip(got["mems"], want["mems"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if settings.get("loss_scaling"):  # one finite step: no growth yet
        assert float(got["step"].loss_scale.numpy()) == 2.0 ** 12
        assert int(got["step"].good_steps.numpy()) == 1


def test_clip_scales_the_update_to_the_clip_norm(want):
    clip = 0.5 * want["norm"]
    got = one_step(clip=clip)
    np.testing.assert_allclose(got["norm"], want["norm"], rtol=1e-4)  # the pre-clip norm
    assert_update(got, want["grads"], scale=clip / want["norm"])


def test_non_finite_gradient_skips_the_update_and_halves_the_scale():
    got = one_step(nan_memory=True, clip=0.0, loss_scaling=True,
                      initial_loss_scale=2.0 ** 12)
    assert got["skipped"] == 1.0 and not np.isfinite(got["norm"])
    assert all(not np.any(u) for u in got["updates"])
    assert float(got["step"].loss_scale.numpy()) == 2.0 ** 11
    assert int(got["step"].good_steps.numpy()) == 0
