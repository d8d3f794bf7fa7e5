"""`txl_tf.commands.train.train` and `runners/train.py` end to end on tiny corpora.

* a short run on a tiny slice of the built-in corpus drives the loss below the unigram entropy
  and writes the TensorBoard scalars (read back with TensorBoard's event reader);
* an interrupted and resumed run (dropout on) ends with the weights and memory of an
  uninterrupted one, in-process and after `kill -9` of `runners/train.py`;
* bad values are errors with a clear message.
Every run here is without XLA (`jit_compile="false"`): its compilation of the step was most of
each run's time and is not what these tests check (the compiled step: test_jit_compile.py; the
default `auto` path end to end: the conftest's `trained_byte_model` and
tests/runners/test_own_text_learns.py).
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

import tf_records
import txl_tf
from txl_tf.training.measurement import device_memory
from txl_tf.training.checkpoints import worker_memory
from tf_records import DataOptions, PreparedData
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainError, TrainOptions

from tiny import SYNTHETIC, SYNTHETIC_FLAGS, TRAIN_SIZES, train_config, train_flags

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# One layer in every run: learning, the logs, resuming and warm starts do not depend on the
# stacking of layers (the weights, Adam's slots and the memory are compared whole).
N_LAYER = 1


def config(**changes):
    """The `train` template of the runs here: `train_config` with N_LAYER and `changes`."""
    return train_config(**{"n_layer": N_LAYER, **changes})


def final_weights(model_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
    names = sorted(n for n in reader.get_variable_to_shape_map()
                   if n.startswith("model/") or n.startswith("optimizer/"))
    return {n: reader.get_tensor(n) for n in names}


def assert_same_state(dir_a, dir_b, step, atol=1e-5):
    a, b = final_weights(dir_a), final_weights(dir_b)
    assert a.keys() == b.keys() and len(a) > 10
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=atol, rtol=1e-4, err_msg=name)
    mem_a = worker_memory.read_memory(dir_a, 0, step)
    mem_b = worker_memory.read_memory(dir_b, 0, step)
    assert mem_a is not None and mem_b is not None
    for x, y in zip(mem_a, mem_b):
        np.testing.assert_allclose(x, y, atol=1e-4, rtol=1e-4)


# ------------------------------------------------------------------------------ loss and logs
@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("short")
    data = DataOptions(data_dir=str(root / "data"), dataset="builtin",
                       corpus_options={"max_bytes": 120_000})
    options = TrainOptions(
        model_dir=str(root / "model"), per_host_train_bsz=8, learning_rate=5e-3,
        warmup_steps=10, train_steps=80, steps_per_loop=10, log_steps=20, save_steps=40,
        eval_steps=40, max_eval_batches=4, jit_compile="false")
    summary = train(options, config(), PreparedData(data))
    return options, summary, data


def test_summary_has_the_measured_pace_and_the_memory_figures(short_run):
    options, summary, _ = short_run
    # 8 loops of 10 steps: the first (compilation) apart, the pace of the 70 steps after it.
    assert summary["seconds_per_step_source"] == "measured over 70 steps"
    assert summary["seconds_per_step"] > 0 and summary["compile_seconds"] >= 0
    assert summary["estimated_seconds_per_step"] == pytest.approx(
        summary["train_flops_per_step"] / summary["matmul_peak_flops"])  # one replica
    assert summary["mfu"] == pytest.approx(summary["train_flops_per_step"] / (
        summary["seconds_per_step"] * summary["matmul_peak_flops"]))
    memory = summary["device_memory"]
    assert memory["peak_bytes"] is None and memory["reason"] == device_memory.CPU_REASON
    estimate = memory["estimate"]
    assert estimate["streams_per_chunk"] == options.per_host_train_bsz
    assert estimate["estimated_peak_bytes"] == (
        options.per_host_train_bsz * estimate["activation_bytes_per_stream"]
        + estimate["weights_and_adam_bytes"])
    with open(os.path.join(options.model_dir, "train_summary.json")) as f:
        assert json.load(f)["device_memory"] == memory


def test_short_run_learns_and_writes_tensorboard(short_run):
    options, summary, _ = short_run
    baseline = summary["unigram_entropy_nats"]
    assert baseline is not None and 2.0 < baseline < np.log(256)
    train = event_accumulator.EventAccumulator(os.path.join(options.model_dir, "train"),
                                               size_guidance={"tensors": 0})
    train.Reload()
    tags = set(train.Tags()["tensors"])
    assert {"loss", "bpc", "learning_rate", "grad_norm", "tokens_per_sec", "config"} <= tags
    losses = [(e.step, float(tf.make_ndarray(e.tensor_proto))) for e in train.Tensors("loss")]
    assert [s for s, _ in losses] == [20, 40, 60, 80]
    assert losses[-1][1] < losses[0][1] - 0.5
    assert losses[-1][1] < baseline - 0.3, (losses, baseline)
    bpc = [float(tf.make_ndarray(e.tensor_proto)) for e in train.Tensors("bpc")]
    np.testing.assert_allclose(bpc, [l / np.log(2) for _, l in losses], rtol=1e-5)
    lr = [float(tf.make_ndarray(e.tensor_proto)) for e in train.Tensors("learning_rate")]
    assert lr[0] > lr[-1] > 0
    valid = event_accumulator.EventAccumulator(os.path.join(options.model_dir, "valid"),
                                               size_guidance={"tensors": 0})
    valid.Reload()
    steps = [e.step for e in valid.Tensors("loss")]
    assert steps == [40, 80] and {"loss", "bpc"} <= set(valid.Tags()["tensors"])
    assert summary["valid_loss"] < baseline


def test_short_run_model_dir_is_complete(short_run):
    options, summary, _ = short_run
    with open(os.path.join(options.model_dir, "train_summary.json")) as f:
        assert json.load(f)["step"] == 80
    for name in ("config.json", "vocab.txt", "corpus-info.json", "best/best.json",
                 "best/vocab.txt", "best/corpus-info.json"):  # best/ is a model directory
        assert os.path.exists(os.path.join(options.model_dir, name)), name
    model = txl_tf.load_model(options.model_dir)  # the contract with evaluate/generate/export
    assert model.config.d_model == TRAIN_SIZES["d_model"]
    assert txl_tf.load_model(os.path.join(options.model_dir, "best")).config.n_token == 256


def test_flags_that_do_not_fit_the_checkpoint_are_errors(short_run):
    options, _, data = short_run
    with pytest.raises(txl_tf.ConfigError, match=r"d_head[\s\S]*n_head \* d_head"):
        train(options, config(d_head=8), PreparedData(data))


# ----------------------------------------------------------------------------------- resume
def resume_options(root, name, **changes):
    values = dict(model_dir=str(root / name), per_host_train_bsz=4, learning_rate=1e-2,
                  warmup_steps=2, train_steps=12, steps_per_loop=3, log_steps=3, save_steps=4,
                  eval_steps=0, max_eval_batches=2, jit_compile="false")
    values.update(changes)
    return TrainOptions(**values)


def synthetic_data(root):
    return PreparedData(DataOptions(data_dir=str(root / "data"), dataset="synthetic",
                                    corpus_options=SYNTHETIC))


def run_training(root, options, make, **kwargs):
    """`train` on the synthetic corpus of `root/data`, read anew as a new process would."""
    return train(options, make, synthetic_data(root), **kwargs)


# Dropout on in every resumed run: the dropout RNG, optimizer, data position and memory must
# all be restored. Loops of 5 steps, a checkpoint every 5.
RESUMED = dict(train_steps=20, save_steps=5, log_steps=5, steps_per_loop=5)
DROPOUT = dict(dropout=0.2, dropatt=0.1)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The model_dir of an uninterrupted RESUMED run with DROPOUT (read only): what the
    interrupted runs below must end with."""
    root = tmp_path_factory.mktemp("uninterrupted")
    options = resume_options(root, "straight", **RESUMED)
    run_training(root, options, config(**DROPOUT))
    return options.model_dir


def kill_at_first_checkpoint(process, state_file, done):
    """SIGKILL `process` once `state_file` exists (its first checkpoint), it ended, 240 s
    passed or `done` is set; polls every 20 ms (a thread, while this process trains)."""
    deadline = time.time() + 240
    while (not os.path.exists(state_file) and process.poll() is None
           and time.time() < deadline and not done.is_set()):
        time.sleep(0.02)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)


def test_kill_9_then_restart_matches_uninterrupted(tmp_path, capsys, request):
    """`runners/train.py` killed with SIGKILL after its first checkpoint; the restart (the same
    options, through `train`) resumes there and ends where an uninterrupted run ends."""
    options = resume_options(tmp_path, "killed", **RESUMED)
    command = [sys.executable, os.path.join(REPO, "runners", "train.py"),
               f"--model_dir={options.model_dir}", f"--data_dir={tmp_path / 'data'}",
               "--dataset=synthetic", "--per_host_train_bsz=4", "--learning_rate=1e-2",
               "--warmup_steps=2", "--eval_steps=0", "--max_eval_batches=2",
               "--jit_compile=false"] \
        + [f"--{k}={v}" for k, v in RESUMED.items()] + train_flags(n_layer=N_LAYER) \
        + SYNTHETIC_FLAGS \
        + [f"--{k}={v}" for k, v in DROPOUT.items()]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO)
    log = tmp_path / "killed.stderr"  # a file, not a pipe: the child never waits for a reader
    with open(log, "wb") as err:
        process = subprocess.Popen(command, cwd=str(tmp_path), env=env,
                                   stdout=subprocess.DEVNULL, stderr=err)
    done = threading.Event()
    killer = threading.Thread(target=kill_at_first_checkpoint, daemon=True, args=(
        process, os.path.join(options.model_dir, "checkpoint"), done))
    killer.start()
    try:
        # The uninterrupted run, in this process while the child starts and trains (when no
        # test before made it).
        reference = request.getfixturevalue("uninterrupted")
        killer.join()
    finally:
        done.set()
        killer.join()
        if process.poll() is None:
            process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL, log.read_text(errors="replace")[-2000:]
    assert not os.path.exists(os.path.join(options.model_dir, "train_summary.json")), \
        "the run ended before it was killed"
    killed_at = int(tf.train.latest_checkpoint(options.model_dir).rsplit("-", 1)[1])
    capsys.readouterr()
    restarted = run_training(tmp_path, options, config(**DROPOUT))
    assert restarted["resumed"] and restarted["step"] == RESUMED["train_steps"]
    assert f"resuming at step {killed_at}" in capsys.readouterr().out
    assert_same_state(reference, options.model_dir, RESUMED["train_steps"], atol=1e-4)


def test_interrupted_run_resumes_exactly(tmp_path, uninterrupted):
    """Stopped between two checkpoints in this process, resumed from the older one."""
    make = config(**DROPOUT)
    interrupted = resume_options(tmp_path, "interrupted", **RESUMED)
    first = run_training(tmp_path, interrupted, make, stop_after_steps=7)  # last checkpoint: 5
    assert first["step"] == 7 and tf.train.latest_checkpoint(interrupted.model_dir).endswith("-5")
    second = run_training(tmp_path, interrupted, make)
    assert second["resumed"] and second["step"] == RESUMED["train_steps"]
    assert_same_state(uninterrupted, interrupted.model_dir, RESUMED["train_steps"])
    # Started again once finished: nothing is trained or overwritten.
    again = run_training(tmp_path, interrupted, make)
    assert again == json.load(open(os.path.join(interrupted.model_dir, "train_summary.json")))
    assert again["train_loss"] == second["train_loss"] and again["step"] == RESUMED["train_steps"]


# ------------------------------------------------------------------------------------ errors
def test_batch_not_divisible_by_replicas(tmp_path, two_cpu_devices):
    strategy = tf.distribute.MirroredStrategy(two_cpu_devices)
    options = resume_options(tmp_path, "odd", per_host_train_bsz=3)
    with pytest.raises(TrainError, match="not divisible by the 2 replicas"):
        run_training(tmp_path, options, config(), strategy=strategy)


def test_missing_records_name_the_prepare_command(tmp_path):
    options = TrainOptions(model_dir=str(tmp_path / "m"), per_host_train_bsz=4)
    data = DataOptions(data_dir=str(tmp_path / "enwik8"), dataset="enwik8", download=False)
    with pytest.raises(tf_records.DataError, match=r"runners/prepare_data\.py .*--tgt_len=16"):
        train(options, config(), PreparedData(data))


def test_unknown_flag_is_an_error(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(REPO, "runners", "train.py"),
                             "--n_layers=3"], cwd=str(tmp_path), capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
    assert result.returncode != 0
    assert "n_layers" in result.stderr


def test_init_checkpoint_warm_starts_the_weights(short_run, tmp_path):
    options, _, data = short_run
    warm = TrainOptions(model_dir=str(tmp_path / "warm"), per_host_train_bsz=8, learning_rate=1e-9, warmup_steps=0, train_steps=1,
                        steps_per_loop=1, log_steps=1, save_steps=1, eval_steps=0,
                        max_eval_batches=1, init_checkpoint=options.model_dir,
                        jit_compile="false")
    train(warm, config(), PreparedData(data))
    source, started = final_weights(options.model_dir), final_weights(warm.model_dir)
    model_names = [n for n in source if n.startswith("model/")]
    assert model_names
    for name in model_names:  # lr 1e-9: one step moves a weight by ~1e-9 at most
        np.testing.assert_allclose(started[name], source[name], atol=1e-6, err_msg=name)
    with pytest.raises(txl_tf.ConfigError, match="d_model"):
        train(TrainOptions(**{**warm.__dict__, "model_dir": str(tmp_path / "w2")}),
              config(d_model=48), PreparedData(data))


def test_without_checkpoint_memory_resume_restarts_memory(tmp_path):
    options = resume_options(tmp_path, "nomem", checkpoint_memory=False, train_steps=6,
                             save_steps=2)
    run_training(tmp_path, options, config(), stop_after_steps=3)
    assert not os.path.exists(os.path.join(options.model_dir, "memory"))
    summary = run_training(tmp_path, options, config())
    assert summary["resumed"] and summary["step"] == 6
