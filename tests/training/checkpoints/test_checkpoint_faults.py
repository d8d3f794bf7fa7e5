"""Damaged checkpoints, failed saves and bad `--init_checkpoint` values: nothing is lost.

A tiny run leaves ckpt-4, ckpt-8 and ckpt-12 (with their memory) in a model directory; each test
damages a copy of it the way a crash, a full disk or a user would, then resumes:
* through `train` with the options of runners/train.py's flags, the error sorted as the runner
  sorts it (exit code, one line naming the problem, no traceback; one case through
  `runners/train.py` itself, run in this process by `call_runner`), checking that the older
  checkpoints' files keep their bytes and mtimes and that the damaged ones are moved into
  damaged/, never written over;
* through `TrainCheckpoints.restore` where finer checks are needed: after the fallback, the
  restored variables are those of the older checkpoint, tensor for tensor.
The disk-full case mounts a 3 MB tmpfs as model_dir (skipped when mounting is not permitted).
The runs are without XLA (`--jit_compile=false`): its compilation of the step was most of each
run's time, and checkpoints are not what it changes (the compiled step: test_jit_compile.py).
"""
import hashlib
import json
import os
import shutil
import subprocess
import types

import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from runner_calls import call_runner
from runners.cli import errors
from tf_records import DataOptions, PreparedData
from txl_tf.storage.checkpoint_probes import checkpoint_files, checkpoint_problem
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainError, TrainOptions
from txl_tf.training.actions import KeepBest
from txl_tf.training.checkpoints import CheckpointIOError, TrainCheckpoints, dropout_rng_state
from txl_tf.training.checkpoints import worker_memory
from txl_tf.training.lr_schedule import WarmupCosineSchedule
from txl_tf.training.optimizer import make_optimizer
from txl_tf.training.trainer import Trainer
from txl_tf.training.run_record.warm_start import warm_start

from tiny import SYNTHETIC, SYNTHETIC_FLAGS, TRAIN_SIZES, train_config, train_flags

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py
# One layer: checkpoints, memory and their fallbacks do not depend on the stacking of layers
# (every layer's memory is written and restored alike).
TINY = dict(TRAIN_SIZES, n_layer=1, dropout=0.0, dropatt=0.0)
RUN = dict(per_host_train_bsz=4, learning_rate=1e-2, warmup_steps=2, train_steps=12,
           steps_per_loop=4, log_steps=4, save_steps=4, eval_steps=0, max_eval_batches=2,
           jit_compile="false")
DATA_FILE = "ckpt-{}.data-00000-of-00001"


def config(**changes):
    """The `train` template of `TINY` (`train_args`'s model flags) with `changes`."""
    return train_config(**{"n_layer": TINY["n_layer"], **changes})


def run_training(options, data_dir, make, **kwargs):
    """`train` on the synthetic corpus of `data_dir`, read anew as a new process would."""
    data = DataOptions(data_dir=data_dir, dataset="synthetic", corpus_options=SYNTHETIC)
    return train(options, make, PreparedData(data), **kwargs)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A model directory with ckpt-4, ckpt-8, ckpt-12 and their memory; the data directory."""
    root = tmp_path_factory.mktemp("faults")
    options = TrainOptions(model_dir=str(root / "base"), **RUN)
    run_training(options, str(root / "data"), config())
    assert sorted(checkpoint_files(options.model_dir)) == [4, 8, 12]
    return types.SimpleNamespace(model_dir=options.model_dir, data_dir=str(root / "data"))


def copy_of(base, tmp_path, name="run"):
    target = str(tmp_path / name)
    shutil.copytree(base.model_dir, target)
    return target


def snapshot(model_dir, numbers):
    """(sha256, mtime_ns) of every file of the checkpoints `numbers` and their memory."""
    found = {}
    for number in numbers:
        paths = [os.path.join(model_dir, n)
                 for n in checkpoint_files(model_dir)[number]]
        memory = os.path.join(model_dir, "memory", "worker-0", f"step-{number}")
        paths += [os.path.join(memory, n) for n in os.listdir(memory)]
        for path in paths:
            with open(path, "rb") as f:
                found[path] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    assert len(found) >= 4 * len(numbers)
    return found


def tensors(prefix, scopes=("model/", "optimizer/", "step/")):
    reader = tf.train.load_checkpoint(prefix)
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
            if n.startswith(scopes)}


def restore_fresh(model_dir, tmp_path):
    """`TrainCheckpoints.restore` into freshly built objects, as `train` builds them;
    returns (step, memory, the restored tensors written back out, TrainCheckpoints)."""
    model = txl_tf.TransformerXL(txl_tf.load_config(model_dir))
    optimizer = make_optimizer(WarmupCosineSchedule(1e-2, 2, 12, 0.004))
    trainer = Trainer(model, optimizer, tf.distribute.get_strategy())
    ckpts = TrainCheckpoints(
        model_dir, dict(model=model, optimizer=optimizer, step=trainer.step,
                        loss_scale=trainer.loss_scale, good_steps=trainer.good_steps,
                        dropout_rng=dropout_rng_state(model)))
    step, memory = ckpts.restore()
    written = ckpts.checkpoint.write(str(tmp_path / "restored" / "ckpt"))
    return step, memory, tensors(written), ckpts


def assert_restored_from(prefix, restored):
    expected = tensors(prefix)
    assert expected.keys() == restored.keys() and len(expected) > 20
    for name, value in expected.items():
        np.testing.assert_array_equal(restored[name], value, err_msg=name)


# ----------------------------------------------------------------------------------- runner
def train_args(base, model_dir, *extra, train_steps=16, tiny=TINY):
    """runners/train.py's flags of the options `options_of` gives."""
    return ([f"--model_dir={model_dir}", f"--data_dir={base.data_dir}", "--dataset=synthetic",
             "--per_host_train_bsz=4", "--learning_rate=1e-2", "--warmup_steps=2",
             f"--train_steps={train_steps}", "--steps_per_loop=4", "--log_steps=4",
             "--save_steps=4", "--eval_steps=0", "--max_eval_batches=2", "--jit_compile=false"]
            + train_flags(**tiny) + SYNTHETIC_FLAGS + list(extra))


def run(args, cwd):
    """runners/train.py with `args`, as `__main__` in this process (`call_runner`: its flag
    parsing, error line and exit code)."""
    result = call_runner("train", args, cwd=cwd)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result


def error_line(result):
    """The one `error:` line of a failed run (exactly one, and the last line of stderr)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == lines[0]
    return lines[0]


def options_of(model_dir, **changes):
    """The `TrainOptions` of `train_args`'s flags (RUN, 16 steps) with `changes`."""
    return TrainOptions(model_dir=model_dir, **{**RUN, "train_steps": 16, **changes})


def refusal(options, data_dir, template=None):
    """(exit code, error line) that runners/train.py gives for the error `train` raises with
    `options` (`runners/cli/errors.classify`: an expected failure, so no traceback)."""
    with pytest.raises(Exception) as raised:
        run_training(options, data_dir, template or config())
    result = errors.classify(raised.value)
    assert result is not None, raised.value  # a bug: the runner would print its traceback
    code, message = result
    return code, "error: " + " ".join(message.split())


def test_deleted_newest_index_resumes_from_the_older_one(base, tmp_path, capsys):
    model_dir = copy_of(base, tmp_path)
    before = snapshot(model_dir, [4, 8])
    damaged_data = open(os.path.join(model_dir, DATA_FILE.format(12)), "rb").read()
    os.remove(os.path.join(model_dir, "ckpt-12.index"))
    summary = run_training(options_of(model_dir), base.data_dir, config())
    out = capsys.readouterr().out
    assert (f"resuming from {model_dir}/ckpt-8, the newest readable checkpoint; skipped "
            "ckpt-12 (ckpt-12.index is missing)") in out
    assert "resuming at step 8" in out
    # A changed --train_steps re-stretches the learning-rate schedule: one line says so.
    assert "note: resuming with --train_steps=16 (was 12)" in out
    assert snapshot(model_dir, [4, 8]) == before  # nothing older was written over
    # The damaged files were moved aside, never overwritten by the new ckpt-12.
    kept = os.path.join(model_dir, "damaged", "ckpt-12")
    assert sorted(os.listdir(kept)) == [DATA_FILE.format(12), "memory-worker-0"]
    assert open(os.path.join(kept, DATA_FILE.format(12)), "rb").read() == damaged_data
    assert sorted(checkpoint_files(model_dir)) == [4, 8, 12, 16]
    assert summary["step"] == 16
    assert json.load(open(os.path.join(model_dir, "train_summary.json")))["step"] == 16


def test_garbage_state_file_does_not_hide_the_checkpoints(base, tmp_path, capfd):
    model_dir = copy_of(base, tmp_path)
    before = snapshot(model_dir, [4, 8, 12])
    with open(os.path.join(model_dir, "checkpoint"), "w") as f:
        f.write("garbage\n")
    capfd.readouterr()
    run_training(options_of(model_dir, train_steps=12), base.data_dir, config())
    out, err = capfd.readouterr()
    assert "already trained to step 12" in out
    assert "'checkpoint' state file cannot be parsed" in out
    assert open(os.path.join(model_dir, "damaged", "checkpoint")).read() == "garbage\n"
    assert snapshot(model_dir, [4, 8, 12]) == before
    assert tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "ckpt-12")
    assert "ParseError" not in err  # TensorFlow's own warnings stay quiet


def test_every_checkpoint_damaged_is_one_error_and_nothing_is_touched(base, tmp_path):
    model_dir = copy_of(base, tmp_path)
    for number in (4, 8, 12):
        os.truncate(os.path.join(model_dir, DATA_FILE.format(number)), 100)
    before = snapshot(model_dir, [4, 8, 12])
    code, line = refusal(options_of(model_dir), base.data_dir)
    assert code == 1
    assert f"no readable checkpoint in {model_dir}: ckpt-12:" in line and "ckpt-4:" in line
    assert snapshot(model_dir, [4, 8, 12]) == before  # no fresh start over them
    assert sorted(checkpoint_files(model_dir)) == [4, 8, 12]
    assert not os.path.exists(os.path.join(model_dir, "damaged"))


@pytest.mark.parametrize("case", ["garbage file", "missing", "empty directory",
                                  "other shapes"])
def test_bad_init_checkpoint_is_one_line(base, tmp_path, case):
    """One case through runners/train.py as a user types it; the others through `train`, with
    the exit code and line the runner gives that error (`runners/cli/errors.classify`)."""
    path = str(tmp_path / "init")
    if case == "garbage file":
        with open(path, "wb") as f:
            f.write(os.urandom(300))
        expected = "not a checkpoint"
    elif case == "missing":
        expected = "no such file or directory"
    elif case == "empty directory":
        os.makedirs(path)
        expected = "no checkpoint in that directory"
    else:  # a checkpoint prefix (no config.json to compare) of a model with another d_model
        path = os.path.join(base.model_dir, "ckpt-12")
        expected = "does not fit a model of this configuration"
    model_dir = str(tmp_path / "warm")
    sizes = dict(d_model=48) if case == "other shapes" else {}
    if case == "garbage file":
        result = run(train_args(base, model_dir, f"--init_checkpoint={path}", train_steps=4,
                                tiny=dict(TINY, **sizes)), tmp_path)
        code, line = result.returncode, error_line(result)
    else:
        code, line = refusal(options_of(model_dir, init_checkpoint=path, train_steps=4),
                             base.data_dir, config(**sizes))
    assert code == 2
    assert line.startswith(f"error: --init_checkpoint={path}: ") and expected in line, line
    assert not os.path.exists(model_dir)  # refused before anything was written


def test_damaged_init_checkpoint_is_a_train_error(base, tmp_path):
    source = copy_of(base, tmp_path, "source")
    os.truncate(os.path.join(source, DATA_FILE.format(12)), 1000)
    model = txl_tf.TransformerXL(txl_tf.load_config(source))
    with pytest.raises(TrainError, match=r"ckpt-12 cannot be read: its files are damaged"):
        warm_start(model, os.path.join(source, "ckpt-12.index"), model.config)
    # The .index file name is accepted for the prefix, and an intact one loads.
    assert warm_start(model, os.path.join(source, "ckpt-8.index"), model.config).endswith(
        "ckpt-8")


def mount_tmpfs(path, size):
    os.makedirs(path)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path],
                            capture_output=True, text=True)
    if result.returncode:
        pytest.skip(f"cannot mount a tmpfs for the disk-full case: {result.stderr.strip()}")


def test_disk_full_keeps_the_previous_checkpoint(base, tmp_path, capsys):
    """About 2 MB per checkpoint (one layer of about 170k weights, with Adam's two slots) on a
    3 MB tmpfs: ckpt-2 fits, ckpt-4 does not (the manager writes the new checkpoint before
    deleting the old one)."""
    mount = str(tmp_path / "small")
    mount_tmpfs(mount, "3m")
    try:
        model_dir = os.path.join(mount, "m")
        options = options_of(model_dir, keep_checkpoints=1, save_steps=2, steps_per_loop=2,
                             log_steps=2, train_steps=6)
        bigger = config(d_model=64, d_head=32, d_inner=1152)
        for attempt in range(2):  # the resumed run meets the same full disk
            capsys.readouterr()
            code, line = refusal(options, base.data_dir, bigger)
            assert code == 1
            assert line.startswith(f"error: no space left on {model_dir}: the checkpoint of "
                                   "step 4 could not be written; the previous checkpoint "
                                   f"{model_dir}/ckpt-2 is intact"), line
            assert ("resuming at step 2" in capsys.readouterr().out) == (attempt == 1)
            names = os.listdir(model_dir)
            assert sorted(checkpoint_files(model_dir)) == [2], names
            assert not [n for n in names if n.endswith("_temp") or n.startswith(".tmp")], names
            assert worker_memory.memory_steps(model_dir, 0) == [2]
            assert checkpoint_problem(os.path.join(model_dir, "ckpt-2")) is None
            assert tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "ckpt-2")
    finally:
        subprocess.run(["umount", "-l", mount], check=False)


def test_read_only_model_dir_with_a_damaged_newest_checkpoint(base, tmp_path):
    """The damaged checkpoint cannot be moved aside: stop rather than train on and write over
    it later."""
    mount = str(tmp_path / "ro")
    mount_tmpfs(mount, "8m")
    try:
        model_dir = os.path.join(mount, "m")
        shutil.copytree(base.model_dir, model_dir)
        os.remove(os.path.join(model_dir, "ckpt-12.index"))
        subprocess.run(["mount", "-o", "remount,ro", mount], check=True)
        with pytest.raises(CheckpointIOError,
                           match=rf"^cannot set the damaged checkpoints of {model_dir} aside "
                           r"\(Read-only file system\)"):
            restore_fresh(model_dir, tmp_path)
        assert sorted(checkpoint_files(model_dir)) == [4, 8, 12]
    finally:
        subprocess.run(["umount", mount], check=False)


# -------------------------------------------------------------------------- library: restore
@pytest.mark.parametrize("damage", ["truncated .data", "missing .data", "same-size bit flips",
                                    "truncated memory", "garbage .index"])
def test_restore_falls_back_to_the_exact_older_state(base, tmp_path, damage, capsys):
    model_dir = copy_of(base, tmp_path)
    before = snapshot(model_dir, [4, 8])
    data = os.path.join(model_dir, DATA_FILE.format(12))
    if damage == "truncated .data":
        os.truncate(data, os.path.getsize(data) // 2)
    elif damage == "missing .data":
        os.remove(data)
    elif damage == "same-size bit flips":
        with open(data, "r+b") as f:
            f.seek(os.path.getsize(data) // 2)
            f.write(b"\xff" * 64)
    elif damage == "truncated memory":
        memory = os.path.join(model_dir, "memory", "worker-0", "step-12",
                              "memory.data-00000-of-00001")
        os.truncate(memory, os.path.getsize(memory) // 2)
    else:
        with open(os.path.join(model_dir, "ckpt-12.index"), "wb") as f:
            f.write(b"garbage" * 20)
    step, memory, restored, _ = restore_fresh(model_dir, tmp_path)
    assert step == 8
    assert_restored_from(os.path.join(model_dir, "ckpt-8"), restored)
    expected_memory = worker_memory.read_memory(model_dir, 0, 8)
    assert memory is not None and len(memory) == TINY["n_layer"]
    for got, want in zip(memory, expected_memory):
        np.testing.assert_array_equal(got, want)
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"warning: resuming from {model_dir}/ckpt-8, the newest readable "
                           "checkpoint; skipped ckpt-12 (") and "\n" not in line, line
    assert snapshot(model_dir, [4, 8]) == before
    assert sorted(checkpoint_files(model_dir)) == [4, 8]
    assert os.listdir(os.path.join(model_dir, "damaged")) == ["ckpt-12"]
    assert tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "ckpt-8")


def test_memory_damaged_everywhere_restores_the_weights_with_zero_memory(base, tmp_path,
                                                                          capsys):
    model_dir = copy_of(base, tmp_path)
    for number in (4, 8, 12):
        os.remove(os.path.join(model_dir, "memory", "worker-0", f"step-{number}",
                               "memory.index"))
    step, memory, restored, _ = restore_fresh(model_dir, tmp_path)
    assert step == 12 and memory is None
    assert_restored_from(os.path.join(model_dir, "ckpt-12"), restored)
    out = capsys.readouterr().out
    assert "memory saved with every readable checkpoint is damaged" in out
    assert "memory reset to zeros" in out


def test_state_file_naming_missing_files(base, tmp_path):
    model_dir = copy_of(base, tmp_path)
    for name in checkpoint_files(model_dir)[12]:
        os.remove(os.path.join(model_dir, name))
    step, _, restored, _ = restore_fresh(model_dir, tmp_path)
    assert step == 8
    assert_restored_from(os.path.join(model_dir, "ckpt-8"), restored)


def test_leftovers_of_interrupted_saves_are_cleaned_before_the_next_save(base, tmp_path):
    model_dir = copy_of(base, tmp_path)
    # A swap of best/ interrupted between its two renames: best/ missing, the old one aside
    # (with a leftover of its own, cleaned once it is back).
    os.replace(os.path.join(model_dir, "best"), os.path.join(model_dir, ".best-old"))
    leftovers = [os.path.join(model_dir, "ckpt-16_temp"),
                 os.path.join(model_dir, ".best-old", "ckpt-16_temp"),
                 os.path.join(model_dir, "memory", "worker-0", ".tmp-step-16-abc"),
                 os.path.join(model_dir, ".best-tmp-16")]
    for path in leftovers:
        os.makedirs(path)
        with open(os.path.join(path, "part-00000-of-00001.data-00000-of-00001"), "wb") as f:
            f.write(b"\0" * 10_000)
    leftovers[1] = os.path.join(model_dir, "best", "ckpt-16_temp")
    with open(os.path.join(model_dir, ".tmp-abc.json"), "w") as f:
        f.write("{")
    step, memory, _, ckpts = restore_fresh(model_dir, tmp_path)
    assert not os.path.exists(os.path.join(model_dir, ".best-old"))
    assert step == 12
    for path in leftovers + [os.path.join(model_dir, ".tmp-abc.json")]:
        assert not os.path.exists(path), path
    assert txl_tf.load_model(os.path.join(model_dir, "best")).config.d_model == 32
    os.makedirs(os.path.join(model_dir, "ckpt-20_temp"))  # e.g. left by a concurrent crash
    ckpts.save(16, [memory])
    assert not os.path.exists(os.path.join(model_dir, "ckpt-20_temp"))
    assert sorted(checkpoint_files(model_dir)) == [4, 8, 12, 16]
    assert sorted(worker_memory.memory_steps(model_dir, 0)) == [4, 8, 12, 16]


def test_failed_best_copy_leaves_best_intact(base, tmp_path, monkeypatch):
    model_dir = copy_of(base, tmp_path)
    best = os.path.join(model_dir, "best")
    before = {n: open(os.path.join(best, n), "rb").read() for n in os.listdir(best)}
    _, _, _, ckpts = restore_fresh(model_dir, tmp_path)
    keep = KeepBest(ckpts.best, "word")  # the synthetic corpus is word-level
    original = tf.train.CheckpointManager.save

    def full_disk(manager, *args, **kwargs):
        if ".best-tmp-" in manager.directory:
            raise tf.errors.ResourceExhaustedError(None, None, "x; No space left on device")
        return original(manager, *args, **kwargs)

    monkeypatch.setattr(tf.train.CheckpointManager, "save", full_disk)
    with pytest.raises(CheckpointIOError, match=rf"^no space left on {model_dir}: "
                       r"the best checkpoint \(step 16\) could not be written"):
        keep.consider(16, -1.0)
    assert keep.best_step == json.loads(before["best.json"])["step"]  # the record unchanged
    assert {n: open(os.path.join(best, n), "rb").read() for n in os.listdir(best)} == before
    assert not [n for n in os.listdir(model_dir) if n.startswith(".best")]
    monkeypatch.setattr(tf.train.CheckpointManager, "save", original)
    assert keep.consider(16, -1.0)  # and a working save swaps the new one in
    assert json.load(open(os.path.join(best, "best.json")))["step"] == 16
    assert sorted(checkpoint_files(best)) == [16]


def test_load_model_past_a_garbage_state_file_and_on_a_damaged_checkpoint(base, tmp_path):
    """The consumers of a model directory (evaluate, generate, export) go through load_model."""
    model_dir = copy_of(base, tmp_path)
    with open(os.path.join(model_dir, "checkpoint"), "w") as f:
        f.write("\0garbage")
    assert txl_tf.latest_checkpoint(model_dir) == os.path.join(model_dir, "ckpt-12")
    assert txl_tf.load_model(model_dir).config.d_model == TINY["d_model"]
    os.truncate(os.path.join(model_dir, DATA_FILE.format(12)), 1000)
    with pytest.raises(txl_tf.storage.model_files.CheckpointReadError,
                       match=rf"^the checkpoint {model_dir}/ckpt-12 cannot be read: its files are "
                       r"damaged or not a TF checkpoint \(Read less bytes than requested\)\.$"):
        txl_tf.load_model(model_dir)


def test_one_loop_run_reports_tokens_per_sec(base, tmp_path, capsys):
    options = TrainOptions(model_dir=str(tmp_path / "short"), **dict(RUN, train_steps=4))
    summary = run_training(options, base.data_dir, config())
    assert summary["tokens_per_sec"] > 0 and summary["tokens_per_sec_includes_tracing"]
    capsys.readouterr()
    # Resumed with another --train_steps and stopped at step 14 (loops 5-8, 9-12, 13-14; the
    # last checkpoint is step 12's).
    sixteen = TrainOptions(**dict(options.__dict__, train_steps=16))
    longer = run_training(sixteen, base.data_dir, config(), stop_after_steps=14)
    assert "note: resuming with --train_steps=16 (was 4): the learning-rate schedule is " \
           "recomputed over 16 steps from step 4 on" in capsys.readouterr().out
    assert longer["tokens_per_sec"] > 0 and not longer["tokens_per_sec_includes_tracing"]
    assert longer["resumed"] and longer["step"] == 14
    # Resumed again (from step 12) with the same flags: nothing to say.
    assert run_training(sixteen, base.data_dir, config())["step"] == 16
    out = capsys.readouterr().out
    assert "resuming at step 12" in out and "note:" not in out


def test_files_of_the_model_dir_respect_the_umask(base):
    mask = os.umask(0)
    os.umask(mask)
    for name in ("config.json", "schedule.json", "train_summary.json", "best/best.json",
                 "best/config.json", "ckpt-12.index", "memory/worker-0/step-12/memory.index"):
        mode = os.stat(os.path.join(base.model_dir, name)).st_mode & 0o777
        assert mode == 0o666 & ~mask, (name, oct(mode))
    for name in ("best", "memory/worker-0/step-12"):
        mode = os.stat(os.path.join(base.model_dir, name)).st_mode & 0o777
        assert mode == 0o777 & ~mask, (name, oct(mode))
