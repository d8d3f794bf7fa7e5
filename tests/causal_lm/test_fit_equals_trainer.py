"""`TransformerXLCausalLM.fit` against `txl_tf.training.Trainer`: from the same initial weights
and the same contiguous batches, the same per-step losses, final weights and memory, on one
device and on two replicas (MirroredStrategy on two logical CPUs), also with
steps_per_execution and with mixed precision. The memory of two stacked layers: the one-device
run; the others have one layer (what they add is the loop of several steps, the replicas, the
loss scaling, not the stacking of layers, and each layer adds to every trace of fit's step).

The Trainer reads per-replica batches (`tf_records.dataset_from_tokens` with replicas_per_host
R, through `distribute_datasets_from_function`); fit reads the same streams as global batches
(per_replica_batch R * B, one replica's streams after the other), which Keras splits by rows.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_records
import txl_tf
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer
from txl_tf.training.step_settings import StepSettings

from tiny import tiny_config

CONFIG = tiny_config(n_token=16, mem_len=5, init_std=0.02)
ONE_LAYER = CONFIG.replace(n_layer=1)
GLOBAL_BATCH, STEPS, LR, CLIP = 4, 6, 2e-2, 0.25
TOKENS = tf_records.corpora.synthetic.synthetic_stream(
    GLOBAL_BATCH * (STEPS * CONFIG.tgt_len + 1), num_symbols=16, period=9, repeats=2, seed=3)


def new_backbone(config):
    keras.utils.set_random_seed(11)
    return txl_tf.TransformerXL(config)


def trainer_run(strategy, replicas, config=CONFIG, loss_scaling=False):
    """Per-step losses, weights and memory [L, R*B, M, D] of the Trainer, one step per call."""
    with strategy.scope():
        model = new_backbone(config)
        trainer = Trainer(model, make_optimizer(LR), strategy,
                          StepSettings(clip=CLIP, loss_scaling=loss_scaling))
    per_replica = GLOBAL_BATCH // replicas
    iterator = iter(strategy.distribute_datasets_from_function(
        lambda ctx: tf_records.dataset_from_tokens(TOKENS, per_replica, config.tgt_len,
                                                   replicas_per_host=replicas)))
    mems, losses = trainer.init_memory(per_replica), []
    for _ in range(STEPS):
        mems, stats = trainer.train(iterator, mems, 1)
        losses.append(stats.loss)
    return dict(losses=np.array(losses), weights=[v.numpy() for v in model.trainable_variables],
                memory=np.stack(trainer.memory_to_host(mems)))


def fit_run(strategy, config=CONFIG, steps_per_execution=1):
    """The same with fit: a stock keras Adam (same settings as the Trainer's), epochs of
    `steps_per_execution` steps, so that each epoch's loss is the mean of its steps (one epoch
    of all the steps when steps_per_execution does not divide them)."""
    with strategy.scope():
        lm = txl_tf.TransformerXLCausalLM(new_backbone(config))
        lm.compile(optimizer=keras.optimizers.Adam(LR, beta_1=0.9, beta_2=0.999, epsilon=1e-8),
                   clip=CLIP, steps_per_execution=steps_per_execution)
    data = tf_records.dataset_from_tokens(TOKENS, GLOBAL_BATCH, config.tgt_len)
    if STEPS % steps_per_execution:  # one pass, its last execution shorter
        history = lm.fit(data, epochs=1, verbose=0)
    else:
        history = lm.fit(data, epochs=STEPS // steps_per_execution,
                         steps_per_epoch=steps_per_execution, verbose=0)
    return dict(losses=np.array(history.history["loss"]),
                weights=[v.numpy() for v in lm.backbone.trainable_variables],
                memory=lm.memory_to_host(), lm=lm)


def assert_close(actual, expected, rtol):
    """Within `rtol` relative to the tensor's norm: Grappler rewrites the two step graphs
    (fit's step and the Trainer's loop body) differently, which moves single entries by a few
    float32 roundings (with the meta optimizer off, the weights are bit-identical)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    assert np.linalg.norm(actual - expected) <= rtol * np.linalg.norm(expected), (
        np.linalg.norm(actual - expected) / np.linalg.norm(expected))


def assert_same_run(fit, trainer, steps_per_execution=1, rtol=1e-5):
    steps = steps_per_execution if STEPS % steps_per_execution == 0 else STEPS
    expected = trainer["losses"].reshape(-1, steps).mean(axis=1)
    np.testing.assert_allclose(fit["losses"], expected, rtol=rtol)
    assert len(fit["weights"]) == len(trainer["weights"])
    for a, b in zip(fit["weights"], trainer["weights"]):
        assert_close(a, b, rtol)
    assert_close(fit["memory"], trainer["memory"], rtol)


@pytest.fixture(scope="module")
def one_device_trainer():
    return trainer_run(tf.distribute.get_strategy(), 1)


@pytest.fixture(scope="module")
def one_layer_trainer():
    return trainer_run(tf.distribute.get_strategy(), 1, ONE_LAYER)


@pytest.fixture(scope="module")
def two_replica_trainer():
    """The Trainer's run on two replicas (MirroredStrategy on the conftest's two logical
    CPUs), one layer."""
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
    assert len(devices) == 2, devices
    return trainer_run(tf.distribute.MirroredStrategy(devices), 2, ONE_LAYER)


def test_fit_equals_trainer_on_one_device(one_device_trainer):
    run = fit_run(tf.distribute.get_strategy())
    assert_same_run(run, one_device_trainer)
    # the run learned something and clipping was active: the comparison is not of no-ops
    assert run["losses"][-1] < run["losses"][0]
    assert run["lm"].optimizer.iterations.numpy() == STEPS


def test_fit_with_steps_per_execution_equals_trainer(one_layer_trainer):
    assert_same_run(fit_run(tf.distribute.get_strategy(), ONE_LAYER, steps_per_execution=3),
                    one_layer_trainer, steps_per_execution=3)


def test_fit_equals_trainer_on_two_replicas(two_cpu_devices, one_layer_trainer,
                                            two_replica_trainer):
    """fit on two replicas in executions of 4 steps over 6 batches (the second execution stops
    at the data's end) equals the Trainer on two replicas, which trains the same model as one
    device (the memory moved with its streams)."""
    trainer = two_replica_trainer
    run = fit_run(tf.distribute.MirroredStrategy(two_cpu_devices), ONE_LAYER,
                  steps_per_execution=4)
    assert_same_run(run, trainer, steps_per_execution=4)
    assert run["lm"].optimizer.iterations.numpy() == STEPS
    assert_same_run(trainer, one_layer_trainer, rtol=1e-4)


def test_fit_with_mixed_precision_equals_trainer():
    """One layer: the loss scaling and the float16 compute are what differ from the float32
    runs above (the stacked layers' memory: the one-device run)."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        trainer = trainer_run(tf.distribute.get_strategy(), 1, ONE_LAYER, loss_scaling=True)
        run = fit_run(tf.distribute.get_strategy(), ONE_LAYER)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert run["lm"].backbone.dtype_policy.name == "mixed_float16"
    assert run["lm"]._replica_step.loss_scaling
    assert_same_run(run, trainer)
