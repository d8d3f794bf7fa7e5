"""`txl_tf.training.trainer.Trainer`: replicas, compiled multi-step loops, accumulation, memory, clipping.

Every test compares two independent computations: one replica vs two (MirroredStrategy on two
logical CPUs), steps_per_loop 1 vs 5, one batch vs accumulated chunks, the trainer's memory vs an
eager chain of model calls, the trainer's first update vs a hand-written clip + Adam step.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer
from txl_tf.training.step_settings import StepSettings

from tiny import reset_to_start, tiny_config

# One layer where the stacking is not what a test checks (replicas, loops, accumulation, the
# update); two in the memory test: the first layer's memory is the embeddings of the last
# segment, which a reset of the memory leaves unchanged, a deeper layer's is not.
CONFIG = tiny_config(n_token=24, mem_len=5, init_std=0.02, n_layer=1)
DEEP = tiny_config(n_token=24, mem_len=5, init_std=0.02, n_layer=2)
GLOBAL_BATCH, STEPS = 4, 6


def stream_data(seed=0):
    """int32 [STEPS, GLOBAL_BATCH, tgt_len + 1]: contiguous streams, one row per stream."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, CONFIG.n_token, size=(GLOBAL_BATCH, STEPS * CONFIG.tgt_len + 1))
    t = CONFIG.tgt_len
    return np.stack([rows[:, s * t:s * t + t + 1] for s in range(STEPS)]).astype(np.int32)


def distributed_iterator(strategy, data, replicas):
    per_replica = GLOBAL_BATCH // replicas

    def input_fn(ctx):
        # Element order: step-major, then replica; replica r owns rows [r*B, (r+1)*B).
        x = data.reshape(STEPS * replicas, per_replica, -1)
        return tf.data.Dataset.from_tensor_slices({"inputs": x[:, :, :-1], "labels": x[:, :, 1:]})

    return iter(strategy.distribute_datasets_from_function(input_fn))


def build(strategy, lr=3e-2, clip=0.25, accum=1, config=CONFIG):
    keras.utils.set_random_seed(7)
    with strategy.scope():
        model = txl_tf.TransformerXL(config)
        optimizer = make_optimizer(lr)
    return Trainer(model, optimizer, strategy, StepSettings(clip=clip, grad_accum_steps=accum))


def state(trainer):
    """The trainer's weights and Adam's moments as numpy arrays."""
    opt = trainer.optimizer
    return dict(weights=[v.numpy() for v in trainer.model.trainable_variables],
                adam_m=[v.numpy() for v in opt._momentums],
                adam_v=[v.numpy() for v in opt._velocities])


def train(strategy, replicas, loops, accum=1, lr=3e-2, clip=0.25, again=None):
    """The run's per-loop losses and gradient norms, its end `state`, memory, step and trainer,
    ("first") the `state` after its first loop, ("initial") its starting weights and ("start")
    the model's starting variables. With `again`, a run this function returned: its trainer
    (so its traced loop) from the same start (model variables, Adam's zero state, step 0)
    instead of a new one; `strategy`, `accum`, `lr` and `clip` are then that run's."""
    if again is None:
        trainer = build(strategy, lr=lr, clip=clip, accum=accum)
    else:
        trainer = again["trainer"]
        reset_to_start(trainer, again["start"])
    start = [v.numpy() for v in trainer.model.variables]
    initial = [v.numpy() for v in trainer.model.trainable_variables]
    iterator = distributed_iterator(strategy, stream_data(), replicas)
    mems = trainer.init_memory(GLOBAL_BATCH // replicas)
    losses, norms, first = [], [], None
    for n in loops:
        mems, stats = trainer.train(iterator, mems, n)
        losses.append(stats.loss)
        norms.append(stats.last_grad_norm)
        first = first or state(trainer)
    return dict(losses=losses, norms=norms, first=first, initial=initial, start=start,
                **state(trainer),
                memory=trainer.memory_to_host(mems), step=int(trainer.step.numpy()),
                trainer=trainer)


def assert_same_weights(a, b, atol=1e-5):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=atol, rtol=1e-4)


@pytest.fixture(scope="module")
def one_replica_run():
    return train(tf.distribute.get_strategy(), 1, [1] * STEPS)


@pytest.fixture(scope="module")
def two_replica_run():
    """`one_replica_run`'s steps on two replicas (MirroredStrategy on the conftest's two
    logical CPUs)."""
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
    assert len(devices) == 2, devices
    return train(tf.distribute.MirroredStrategy(devices), 2, [1] * STEPS)


def test_two_replicas_equal_one_replica(one_replica_run, two_replica_run):
    two = two_replica_run
    np.testing.assert_allclose(two["losses"], one_replica_run["losses"], rtol=1e-5)
    # The gradient norm and Adam's second moments see the scale of the reduced gradient (Adam's
    # update and the clipped gradient do not): a double all-reduce would double them.
    np.testing.assert_allclose(two["norms"], one_replica_run["norms"], rtol=1e-4)
    for a, b in zip(two["adam_v"], one_replica_run["adam_v"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-12)
    # Adam divides by sqrt(v): components with near-zero gradients amplify summation-order
    # rounding, hence the tolerance of a small fraction of one update (lr 3e-2).
    assert_same_weights(two["weights"], one_replica_run["weights"], atol=2e-4)
    assert_same_weights(two["memory"], one_replica_run["memory"], atol=2e-3)
    # Host round trip of the memory (checkpoints): replica r gets rows [r*B, (r+1)*B) back.
    trainer = two["trainer"]
    mems = trainer.memory_from_host(two["memory"])
    for layer, host in zip(mems, two["memory"]):
        parts = [t.numpy() for t in trainer.strategy.experimental_local_results(layer)]
        np.testing.assert_array_equal(parts[0], host[:GLOBAL_BATCH // 2])
        np.testing.assert_array_equal(parts[1], host[GLOBAL_BATCH // 2:])
    # The run really changed the weights (so equality is not trivial) and clipping was active.
    assert one_replica_run["initial"]
    assert max(np.abs(w - v).max()
               for w, v in zip(one_replica_run["weights"], one_replica_run["initial"])) > 1e-2


def test_steps_per_loop_does_not_change_the_result(one_replica_run):
    """The same trainer, so the same traced loop, as a training run calls it: loops of 5 and 1
    steps from the start of `one_replica_run`'s loops of 1 (its arrays are read, not changed)."""
    multi = train(tf.distribute.get_strategy(), 1, [5, 1], again=one_replica_run)
    assert multi["trainer"]._train_fn.experimental_get_tracing_count() == 1
    for a, b in zip(multi["initial"], one_replica_run["initial"]):  # the same start
        np.testing.assert_array_equal(a, b)
    assert multi["step"] == one_replica_run["step"] == STEPS
    assert_same_weights(multi["weights"], one_replica_run["weights"], atol=1e-6)
    assert_same_weights(multi["memory"], one_replica_run["memory"], atol=1e-6)
    # Loop loss = token-weighted mean of its steps.
    per_step = one_replica_run["losses"]
    assert multi["losses"][0] == pytest.approx(np.mean(per_step[:5]), rel=1e-5)


def test_gradient_accumulation_equals_full_batch(one_replica_run):
    accumulated = train(tf.distribute.get_strategy(), 1, [3, 3], accum=2)
    for a, b in zip(accumulated["adam_v"], one_replica_run["adam_v"]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-12)
    # Summation order differs (chunks): same tolerance as across replicas.
    assert_same_weights(accumulated["weights"], one_replica_run["weights"], atol=2e-4)
    assert_same_weights(accumulated["memory"], one_replica_run["memory"], atol=2e-3)


def test_memory_is_carried_across_loops_and_evaluations():
    """With lr 0 the weights stay fixed, so the memory after n steps must equal an eager chain
    of n model calls from zero memory; loop boundaries, an evaluation and a host round trip of
    the memory in between must not reset it."""
    strategy = tf.distribute.get_strategy()
    trainer = build(strategy, lr=0.0, config=DEEP)
    data = stream_data()
    iterator = distributed_iterator(strategy, data, 1)
    mems = trainer.init_memory(GLOBAL_BATCH)
    mems, _ = trainer.train(iterator, mems, 2)
    eval_iterator = distributed_iterator(strategy, stream_data(seed=1), 1)
    trainer.evaluate(eval_iterator, GLOBAL_BATCH, num_steps=2)
    mems = trainer.memory_from_host(trainer.memory_to_host(mems))  # as after a checkpoint
    mems, _ = trainer.train(iterator, mems, 3)
    got = trainer.memory_to_host(mems)

    expected = trainer.model.init_mems(GLOBAL_BATCH)
    for step in range(5):
        out = trainer.model(data[step, :, :-1], mems=expected, labels=data[step, :, 1:],
                            training=True)
        expected = out["mems"]
    assert_same_weights(got, [m.numpy() for m in expected], atol=1e-5)
    # And it is not the memory of a fresh start on the last segment (a reset would give that).
    fresh = trainer.model(data[4, :, :-1], mems=trainer.model.init_mems(GLOBAL_BATCH),
                          labels=data[4, :, 1:])["mems"]
    assert len(got) == 2 and np.abs(got[1] - fresh[1].numpy()).max() > 1e-3


def test_first_update_is_clip_after_reduce_then_adam(two_replica_run):
    """Two replicas, one step: the update must equal Adam on the global-norm-clipped gradient of
    the token-mean loss over the whole global batch, computed here without the trainer."""
    lr, clip = 3e-2, 0.25  # `train`'s
    run = dict(two_replica_run["first"], norms=two_replica_run["norms"])

    reference = build(tf.distribute.get_strategy())  # same seed -> same initial weights
    model = reference.model
    data = stream_data()
    with tf.GradientTape() as tape:
        nll = model(data[0, :, :-1], mems=model.init_mems(GLOBAL_BATCH), labels=data[0, :, 1:],
                    training=True)["nll"]
        loss = tf.reduce_mean(nll)
    grads = [tf.convert_to_tensor(g).numpy()
             for g in tape.gradient(loss, model.trainable_variables)]
    norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    assert norm > clip  # clipping is active
    b1, b2, eps = 0.9, 0.999, 1e-8
    for w0, g, w1 in zip(model.trainable_variables, grads, run["weights"]):
        g = g * clip / norm
        m, v = (1 - b1) * g, (1 - b2) * g * g
        step_lr = lr * np.sqrt(1 - b2) / (1 - b1)
        expected = w0.numpy() - step_lr * m / (np.sqrt(v) + eps)
        np.testing.assert_allclose(w1, expected, atol=2e-6, rtol=1e-4)
    # Scale-sensitive checks (Adam's first update is nearly sign(g)): the logged pre-clip norm,
    # and Adam's moments, are those of the gradient reduced exactly once, then clipped.
    assert run["norms"][0] == pytest.approx(norm, rel=1e-4)
    for g, m, v in zip(grads, run["adam_m"], run["adam_v"]):
        g = g * clip / norm
        np.testing.assert_allclose(m, (1 - b1) * g, rtol=1e-3, atol=1e-10)
        np.testing.assert_allclose(v, (1 - b2) * g * g, rtol=1e-3, atol=1e-14)


@pytest.fixture
def policy():
    """Set a Keras dtype policy for one test and restore float32 afterwards."""
    def set_policy(name):
        keras.config.set_dtype_policy(name)
    yield set_policy
    keras.config.set_dtype_policy("float32")


def test_mixed_float16_loss_scaling_skips_overflow_and_grows(policy, two_cpu_devices):
    """Two replicas (every replica skips together; one replica's step skipping and halving the
    scale: tests/training/test_replica_step.py)."""
    policy("mixed_float16")
    replicas = 2
    strategy = tf.distribute.MirroredStrategy(two_cpu_devices)
    with strategy.scope():
        model = txl_tf.TransformerXL(CONFIG)
        optimizer = make_optimizer(1e-2)
    # 2**60 overflows float16 gradients: the steps must be skipped and the scale halved.
    trainer = Trainer(model, optimizer, strategy,
                      StepSettings(loss_scaling=True, initial_loss_scale=2.0 ** 60,
                                   growth_interval=2))
    before = [v.numpy() for v in model.trainable_variables]
    iterator = distributed_iterator(strategy, stream_data(), replicas)
    mems, stats = trainer.train(iterator, trainer.init_memory(GLOBAL_BATCH // replicas), 2)
    assert stats.skipped_steps == 2 and int(optimizer.iterations.numpy()) == 0
    assert float(trainer.loss_scale.numpy()) == 2.0 ** 58
    assert_same_weights([v.numpy() for v in model.trainable_variables], before, atol=0)
    # A sane scale: every step applied, and the scale doubles every growth_interval steps.
    trainer.loss_scale.assign(2.0 ** 8)
    mems, stats = trainer.train(iterator, mems, 4)
    assert stats.skipped_steps == 0 and int(optimizer.iterations.numpy()) == 4
    assert float(trainer.loss_scale.numpy()) == 2.0 ** 10
    assert np.isfinite(stats.loss)


def test_mixed_bfloat16_follows_float32(policy, one_replica_run):
    policy("mixed_bfloat16")
    run = train(tf.distribute.get_strategy(), 1, [STEPS])
    assert run["losses"][0] == pytest.approx(np.mean(one_replica_run["losses"]), abs=5e-2)
