"""The half loss of `Trainer` (`half_loss=True`, --half_loss) against a naive computation.

The naive side is an eager model call and a per-token loop: the mean NLL of the positions
i >= Q // 2 of every segment (labels >= 0), its gradient from a plain `tf.GradientTape`, and the
memory of the same call. The trainer's first step must report that loss, apply that gradient
(Adam's first second-moment update is (1 - beta2) g^2 elementwise), and carry the memory of
the whole segment.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags

import txl_tf
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer
from txl_tf.training.step_settings import StepSettings

from tiny import tiny_config

CONFIG = tiny_config(n_token=20, tgt_len=7, mem_len=4, init_std=0.02)
BATCH = 4
BETA_2 = 0.999


def batch_data():
    """inputs, labels int32 [BATCH, Q]; one stream ends early (labels -1 from position 5)."""
    rng = np.random.default_rng(3)
    rows = rng.integers(0, CONFIG.n_token, size=(BATCH, CONFIG.tgt_len + 1)).astype(np.int32)
    inputs, labels = rows[:, :-1], rows[:, 1:].copy()
    labels[2, 5:] = -1
    return inputs, labels


def trainer_step(half_loss, accum=1):
    keras.utils.set_random_seed(11)
    model = txl_tf.TransformerXL(CONFIG)
    trainer = Trainer(model, make_optimizer(1e-3), tf.distribute.get_strategy(),
                      StepSettings(clip=0.0, grad_accum_steps=accum, half_loss=half_loss))
    initial = [v.numpy() for v in model.trainable_variables]
    inputs, labels = batch_data()
    dataset = tf.data.Dataset.from_tensors({"inputs": inputs, "labels": labels})
    mems, stats = trainer.train(iter(dataset), trainer.init_memory(BATCH), 1)
    return dict(stats=stats, memory=trainer.memory_to_host(mems), initial=initial,
                v=[v.numpy() for v in trainer.optimizer._velocities])


def naive(initial):
    """(half loss, gradients, memory, all target tokens) by an eager call and a token loop."""
    keras.utils.set_random_seed(11)
    model = txl_tf.TransformerXL(CONFIG)
    for variable, value in zip(model.trainable_variables, initial):
        variable.assign(value)
    inputs, labels = batch_data()
    q = CONFIG.tgt_len
    counted = [(b, i) for b in range(BATCH) for i in range(q) if i >= q // 2 and labels[b, i] >= 0]
    with tf.GradientTape() as tape:
        out = model(inputs, mems=model.init_mems(BATCH), labels=np.maximum(labels, 0),
                    training=True)
        loss = tf.add_n([out["nll"][b, i] for b, i in counted]) / len(counted)
    grads = tape.gradient(loss, model.trainable_variables)
    return (float(loss), [tf.convert_to_tensor(g).numpy() for g in grads],
            [m.numpy() for m in out["mems"]], int((labels >= 0).sum()))


@pytest.fixture(scope="module")
def half_run():
    return trainer_step(True)


def test_half_loss_equals_the_naive_second_half_mean(half_run):
    loss, grads, memory, tokens = naive(half_run["initial"])
    stats = half_run["stats"]
    assert stats.loss == pytest.approx(loss, rel=1e-5)
    assert stats.tokens == tokens  # throughput still counts every target token
    assert stats.last_grad_norm == pytest.approx(
        float(np.sqrt(sum((g ** 2).sum() for g in grads))), rel=1e-4)
    for v, g in zip(half_run["v"], grads):
        np.testing.assert_allclose(v, (1 - BETA_2) * g ** 2, rtol=1e-3, atol=1e-14)
    # The memory carries the whole segment, whatever the loss counts.
    for ours, theirs in zip(half_run["memory"], memory):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_half_loss_differs_from_full_loss_and_accumulates(half_run):
    full = trainer_step(False)
    assert abs(full["stats"].loss - half_run["stats"].loss) > 1e-3
    assert max(np.abs(a - b).max() for a, b in zip(full["v"], half_run["v"])) > 1e-12
    accumulated = trainer_step(True, accum=2)
    assert accumulated["stats"].loss == pytest.approx(half_run["stats"].loss, rel=1e-5)
    for a, b in zip(accumulated["v"], half_run["v"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-14)


def test_half_loss_is_a_train_flag():
    from runners.cli.train_flags import define_flags, options_from_flags
    fv = flags.FlagValues()
    define_flags(fv)
    fv(["train.py"])
    assert options_from_flags(fv)[1].half_loss is False
    assert "half loss" in fv["half_loss"].help
    fv(["train.py", "--half_loss"])
    assert options_from_flags(fv)[1].half_loss is True
