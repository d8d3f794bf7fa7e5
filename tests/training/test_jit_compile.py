"""`--jit_compile` (`txl_tf/devices/step_compilation.py`): the training step compiled by XLA
gives the losses, gradient norms, weights, optimizer slots and memory of the same step run by
TensorFlow's kernels (the tolerances of `test_tpu_readiness.py`), through `Trainer.train` as
training runs it, under the default strategy (the whole replica step compiled) and a 2-replica
MirroredStrategy on CPUs (each replica's forward and backward compiled), with gradient
accumulation, mixed_float16 loss scaling (skipped steps included), half loss and dropout; in
half precision (mixed_float16, mixed_bfloat16) the compiled step follows the float32 one.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from txl_tf.devices import step_compilation
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer
from txl_tf.training.step_settings import StepSettings

from tiny import assert_same_state, reset_to_start, stream_batches, tiny_config

# Adaptive softmax with two tail bins (div_val 2), dropout on (the hashed masks are the same with
# and without XLA, so the two runs draw the same ones).
CONFIG = tiny_config(n_token=40, d_embed=16, div_val=2, cutoffs=(10, 25), tgt_len=8, mem_len=8,
                     init_std=0.02, dropout=0.1, dropatt=0.1)
GLOBAL_BATCH, STEPS = 4, 4
# The layers' stacking is not what these tests check (XLA against TensorFlow's kernels over two
# stacked layers, both memories included: tests/model/test_transformer_xl.py::
# test_xla_step_equals_plain_step), so one layer: XLA's compile time grows with the graph.
ONE_LAYER = CONFIG.replace(n_layer=1)
# What the mirrored step adds to the compiled replica `gradients` runs outside XLA (the half-loss
# token count, the unscaling and skipping after the all-reduce); the adaptive softmax and dropout
# inside `gradients` are compiled as in the whole step (ReplicaStep.step calls the same method).
# So the smallest model: one layer, one softmax bin, no dropout (the replicas still see different
# rows, so different gradients).
MIRRORED = ONE_LAYER.replace(cutoffs=(), div_val=1, dropout=0.0, dropatt=0.0)
# The half precisions: the adaptive softmax's bins are what they check; dropout's masks under XLA
# (the same hashed bits in any dtype) are checked within float32 rounding by the whole-step test.
HALF = ONE_LAYER.replace(dropout=0.0, dropatt=0.0)


def batches(steps=STEPS):
    """`steps` global batches [GLOBAL_BATCH, Q] of contiguous streams, some labels padded."""
    return stream_batches(CONFIG, GLOBAL_BATCH, steps)


def run(strategy, jit_compile, precision="float32", config=CONFIG, **trainer_args):
    """STEPS steps of `Trainer.train` on a new model of `config`, one per call; what they gave
    and left (`train_steps`), the model's starting state (`start`, for `rerun`) and starting
    trainable weights (`initial`)."""
    keras.config.set_dtype_policy(precision)
    try:
        keras.utils.set_random_seed(3)
        with strategy.scope():
            model = txl_tf.TransformerXL(config)
            optimizer = make_optimizer(1e-2)
        trainer = Trainer(model, optimizer, strategy, StepSettings(
            clip=0.25, jit_compile=jit_compile, loss_scaling=precision == "mixed_float16",
            **trainer_args))
        start = [v.numpy() for v in model.variables]  # weights and dropout seed states
        initial = [v.numpy() for v in model.trainable_variables]
        assert initial  # built: the trainer's variables exist before its first step
        return dict(train_steps(trainer), config=config, precision=precision, start=start,
                    initial=initial)
    finally:
        keras.config.set_dtype_policy("float32")


def train_steps(trainer):
    """STEPS calls of `trainer.train`, one step each, on `batches()` from zero memory."""
    strategy = trainer.strategy
    data = batches()
    dataset = tf.data.Dataset.from_tensor_slices(
        {k: np.stack([b[k] for b in data]) for k in ("inputs", "labels")}).unbatch()
    dataset = dataset.batch(GLOBAL_BATCH, drop_remainder=True)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    mems = trainer.init_memory(GLOBAL_BATCH // strategy.num_replicas_in_sync)
    losses, norms, skipped = [], [], 0
    for _ in range(STEPS):
        mems, stats = trainer.train(iterator, mems, 1)
        losses.append(stats.loss)
        norms.append(stats.last_grad_norm)
        skipped += stats.skipped_steps
    optimizer = trainer.optimizer
    return dict(trainer=trainer, losses=losses, norms=norms, skipped=skipped,
                loss_scale=float(trainer.loss_scale.numpy()),
                weights=[v.numpy() for v in trainer.model.trainable_variables],
                slots=[v.numpy() for v in optimizer._momentums + optimizer._velocities],
                mems=trainer.memory_to_host(mems))


def rerun(result, loss_scale):
    """The run of `result` again by the same trainer (so by the program it compiled: nothing is
    traced or compiled again), from the same start: the model's starting weights and dropout
    seeds, Adam's zero slots and step count, step 0, the loss scale `loss_scale`."""
    trainer = result["trainer"]
    reset_to_start(trainer, result["start"])
    trainer.loss_scale.assign(loss_scale)
    trainer.good_steps.assign(0)
    keras.config.set_dtype_policy(result["precision"])
    try:
        return dict(result, **train_steps(trainer))
    finally:
        keras.config.set_dtype_policy("float32")


def mean_abs_diff(xs, ys):
    """(mean |x - y|, mean |y|) over all elements of the arrays `xs`, `ys`."""
    x, y = (np.concatenate([np.ravel(a).astype(np.float64) for a in arrays])
            for arrays in (xs, ys))
    return np.abs(x - y).mean(), np.abs(y).mean()


def assert_same_training(xla, plain, float16=False):
    """float32: the tolerances of test_tpu_readiness.py. mixed_float16: the same for the losses,
    norms and loss scaling; weights, slots and memory follow float16 gradients and activations,
    which the two runs round apart in places, and Adam's early steps (about +-lr whatever the
    gradient's size) turn a rounding-level difference of a near-zero gradient into one of up to
    2 lr in that weight: so on average over all elements, within a hundredth of an Adam step
    (1e-4 at lr 1e-2) for the weights, and a thousandth of the mean value for the slots and
    the float16 memory (two runs that differ in more than rounding are a whole step apart)."""
    print(f"\nlosses plain {np.round(plain['losses'], 6).tolist()}, "
          f"XLA {np.round(xla['losses'], 6).tolist()}; skipped {plain['skipped']}")
    np.testing.assert_allclose(xla["losses"], plain["losses"], rtol=1e-5)
    np.testing.assert_allclose(xla["norms"], plain["norms"], rtol=1e-4)
    assert xla["skipped"] == plain["skipped"] and xla["loss_scale"] == plain["loss_scale"]
    if float16:
        assert mean_abs_diff(xla["weights"], plain["weights"])[0] < 1e-4
        for name in ("slots", "mems"):
            diff, size = mean_abs_diff(xla[name], plain[name])
            assert diff < 1e-3 * size, (name, diff, size)
    else:
        assert_same_state(xla, plain)
    # The steps trained (agreement is not that of two no-ops).
    assert max(np.abs(w - v).max() for w, v in zip(plain["weights"], plain["initial"])) > 1e-3


def compiled_hlo(trainer, name, *args):
    """The HLO of the replica step's method `name` as XLA compiled it."""
    compiled = trainer.replica_step._compiled[name]
    return compiled.experimental_get_compiler_ir(*args)(stage="hlo")


# Each setting is compiled once where XLA sees it: gradient accumulation (its unrolled chunks
# double the compiled graph), half loss and dropout in float32, where the state must agree within
# rounding; loss scaling with skipped steps in mixed_float16, one chunk per step.
ACCUMULATION_HALF_LOSS = dict(grad_accum_steps=2, half_loss=True)
FLOAT16_SKIPPING = dict(precision="mixed_float16", initial_loss_scale=2.0 ** 19,
                        growth_interval=2)


@pytest.fixture(scope="module")
def whole_step_plain():
    """The whole-step settings (ONE_LAYER: adaptive softmax, dropout; accumulation, half loss)
    run by TensorFlow's kernels under the default strategy; read only."""
    return run(tf.distribute.get_strategy(), False, config=ONE_LAYER, **ACCUMULATION_HALF_LOSS)


def test_the_plain_step_exercises_every_bin_and_trains(whole_step_plain):
    """What the compiled step is compared with below is not trivial: the labels fall in every
    bin of the adaptive softmax, and the steps trained (agreement is not that of no-ops)."""
    labels = np.concatenate([b["labels"].ravel() for b in batches()])
    for lo, hi in ((0, 10), (10, 25), (25, 40)):  # every bin of the softmax is exercised
        assert ((labels >= lo) & (labels < hi)).sum() > 5
    assert whole_step_plain["trainer"].xla_mode is None
    assert not whole_step_plain["trainer"].replica_step._compiled
    assert whole_step_plain["skipped"] == 0 and np.isfinite(whole_step_plain["losses"]).all()
    assert max(np.abs(w - v).max() for w, v in zip(whole_step_plain["weights"],
                                                   whole_step_plain["initial"])) > 1e-3


def test_whole_step_compiled_equals_the_plain_step_default_strategy(whole_step_plain):
    """Also what TPUStrategy needs of the step (test_tpu_readiness.py): compiled whole by XLA,
    it equals the plain step with the labels in every bin of the adaptive softmax (its HLO,
    with the tail-bin loop as an XLA while loop: the mixed-precision tests below)."""
    xla = run(tf.distribute.get_strategy(), True, config=ONE_LAYER, **ACCUMULATION_HALF_LOSS)
    assert xla["trainer"].xla_mode == "whole"
    assert set(xla["trainer"].replica_step._compiled) == {"step"}
    assert_same_training(xla, whole_step_plain)


@pytest.fixture
def devices_taken_for_gpus(monkeypatch):
    """TensorFlow's MirroredStrategy takes every device for a GPU: it then calls a replica
    function compiled by XLA on each replica as it is and leaves out `merge_call` inside XLA
    except where a variable of aggregation ONLY_FIRST_REPLICA is written (Keras'
    `optimizer.iterations`, the loss scale), which on an H200 failed the whole step compiled
    ("`merge_call` called while defining a new graph"). Logical CPUs run what it traced."""
    from tensorflow.python.distribute import (collective_all_reduce_strategy, mirrored_run,
                                              mirrored_strategy)
    for module in (mirrored_run, mirrored_strategy, collective_all_reduce_strategy):
        monkeypatch.setattr(module, "_is_gpu_device", lambda device: True)
    monkeypatch.setattr(step_compilation, "device_type", lambda name: "GPU")


def test_replica_gradients_compiled_equal_the_plain_step_mirrored(two_cpu_devices,
                                                                  devices_taken_for_gpus):
    """One run pair: what the replica's compiled forward and backward see of accumulation,
    half loss and loss scaling is the whole step's `gradients` (checked above, float32 within
    rounding; XLA compiles it once per replica device, so one chunk per step here); what is
    the mirrored step's own, the half-loss token count and the loss scale's unscaling and
    skipping after the all-reduce, outside XLA, needs half loss and mixed_float16 with steps
    that overflow (the MIRRORED model). On devices TensorFlow takes for GPUs (on CPUs the
    same program): compiled whole, the step's writes of the loss scale and of the optimizer's
    step count would fail there."""
    strategy = tf.distribute.MirroredStrategy(two_cpu_devices)
    settings = dict(FLOAT16_SKIPPING, half_loss=True, config=MIRRORED)
    plain = run(strategy, False, **settings)
    xla = run(strategy, True, **settings)
    assert xla["trainer"].xla_mode == "gradients"
    assert set(xla["trainer"].replica_step._compiled) == {"gradients"}
    assert_same_training(xla, plain, float16=True)
    assert 0 < plain["skipped"] < STEPS


@pytest.fixture(scope="module")
def float32_step():
    """The float32 step (default strategy, TensorFlow's kernels; compiled whole by XLA it
    gives the same state within float32 rounding, the first test): the reference of both
    precisions below, read only."""
    return run(tf.distribute.get_strategy(), False, config=HALF)


def assert_follows_float32(half, reference, dtype):
    """`half`, a run of the step compiled whole in half precision without a skipped step: its
    HLO has `dtype` arrays and the adaptive softmax's tail-bin loop; its losses follow the
    float32 step's (`reference`) within half-precision rounding (2e-2); weights and memory stay
    float32, and differ from float32's."""
    trainer = half["trainer"]
    data = batches()[0]
    config = half["config"]
    mems = [tf.zeros([GLOBAL_BATCH, config.mem_len, config.d_model], tf.float32)
            for _ in range(config.n_layer)]
    keras.config.set_dtype_policy(half["precision"])
    try:
        hlo = compiled_hlo(trainer, "step",
                           {k: tf.constant(v) for k, v in data.items()}, mems)
    finally:
        keras.config.set_dtype_policy("float32")
    assert f"{dtype}[" in hlo and "while" in hlo  # half-precision arrays; the tail-bin loop
    print(f"\n{half['precision']} under XLA: losses {np.round(half['losses'], 5).tolist()}, "
          f"float32 {np.round(reference['losses'], 5).tolist()}")
    assert half["skipped"] == 0
    np.testing.assert_allclose(half["losses"], reference["losses"], rtol=2e-2)
    assert all(w.dtype == np.float32 for w in half["weights"])
    assert all(m.dtype == np.float32 for m in half["mems"])  # the memory stays float32
    # Half precision really computed something else than float32 (Adam's first steps move
    # every weight by about the learning rate, in a direction set by the rounding).
    assert max(np.abs(a - b).max()
               for a, b in zip(half["weights"], reference["weights"])) > 1e-3
    assert max(np.abs(w - v).max() for w, v in zip(half["weights"], half["initial"])) > 1e-3


def test_mixed_bfloat16_compiles_with_the_adaptive_softmax_and_trains(float32_step):
    """mixed_bfloat16 (the TPU precision) compiled whole by XLA: bfloat16 matmuls and the
    adaptive softmax's cutoffs (two tail bins, div_val 2) follow the float32 step
    (`assert_follows_float32`)."""
    half = run(tf.distribute.get_strategy(), True, precision="mixed_bfloat16", config=HALF)
    assert_follows_float32(half, float32_step, "bf16")


@pytest.fixture(scope="module")
def float16_compiled():
    """mixed_float16 compiled whole by XLA (HALF: half-precision matmuls, the adaptive
    softmax's two tail bins with div_val 2, loss scaling from 2**19, where 2**19 and 2**18
    overflow). Its results are host arrays, read only; its trainer is run again from the start
    by the second test below (`rerun`), which reads only what that run gives."""
    return run(tf.distribute.get_strategy(), True, config=HALF, **FLOAT16_SKIPPING)


def test_mixed_float16_compiled_equals_the_plain_step_with_skipped_steps(float16_compiled):
    """From 2**19 the compiled step equals the plain step with its skipped steps and the scale
    regrown."""
    xla = float16_compiled
    plain = run(tf.distribute.get_strategy(), False, config=HALF, **FLOAT16_SKIPPING)
    assert xla["trainer"].xla_mode == "whole" and plain["trainer"].xla_mode is None
    assert set(xla["trainer"].replica_step._compiled) == {"step"}
    assert_same_training(xla, plain, float16=True)
    assert 0 < plain["skipped"] < STEPS  # steps were skipped and the scale regrew
    assert plain["loss_scale"] == 2.0 ** (19 - plain["skipped"] + 1)


def test_mixed_float16_compiled_runs_again_and_follows_float32(float16_compiled, float32_step):
    """The same compiled program run again from the start at the same scale gives the same run
    (the start is the whole state); from the start at the default scale (no step skipped) it
    follows the float32 step (`assert_follows_float32`), traced and compiled once."""
    xla = float16_compiled
    assert 0 < xla["skipped"] < STEPS
    again = rerun(xla, FLOAT16_SKIPPING["initial_loss_scale"])
    np.testing.assert_array_equal(again["losses"], xla["losses"])
    assert again["skipped"] == xla["skipped"] and again["loss_scale"] == xla["loss_scale"]
    for name in ("weights", "slots", "mems"):
        for a, b in zip(again[name], xla[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)
    half = rerun(xla, StepSettings().initial_loss_scale)
    trainer = half["trainer"]
    assert trainer._train_fn.experimental_get_tracing_count() == 1
    assert trainer.replica_step._compiled["step"].experimental_get_tracing_count() == 1
    assert_follows_float32(half, float32_step, "f16")


def test_auto_chooses_per_device_and_precision(two_cpu_devices, monkeypatch):
    default = tf.distribute.get_strategy()
    mirrored = tf.distribute.MirroredStrategy(two_cpu_devices)
    choose = step_compilation.choose
    assert choose("auto", default, "float32").mode == "whole"
    assert choose("auto", mirrored, "float32").mode == "gradients"
    assert choose("auto", default, "mixed_float16").mode == "whole"
    assert choose("auto", default, "mixed_bfloat16").mode is None
    assert choose("true", default, "mixed_bfloat16").mode == "whole"
    assert choose("false", default, "float32").mode is None
    line = choose("auto", default, "float32").line
    assert line.startswith("jit_compile: on (the whole replica training step is compiled by "
                           "XLA); --jit_compile=auto: CPU float32")
    with pytest.raises(ValueError, match="--jit_compile must be one of auto, true, false"):
        choose("yes", default, "float32")
    # A mirrored strategy whose devices are all GPUs compiles each replica's gradients too (its
    # step writes variables through merge_call: test_replica_gradients_compiled_equal_the_plain
    # _step_mirrored); one GPU compiles the whole step; a TPU always compiles.
    monkeypatch.setattr(step_compilation, "strategy_devices",
                        lambda strategy: ["/job:localhost/replica:0/task:0/device:GPU:0",
                                          "/GPU:1"])
    assert choose("auto", mirrored, "mixed_bfloat16") == (
        "gradients", "--jit_compile=auto: GPU")
    assert choose("auto", default, "mixed_bfloat16") == ("whole", "--jit_compile=auto: GPU")
    monkeypatch.setattr(step_compilation, "is_tpu", lambda strategy: True)
    assert choose("false", default, "float32").mode == "tpu"
