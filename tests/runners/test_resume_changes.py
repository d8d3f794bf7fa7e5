"""A resumed `train.py` with other settings than the run's record, and a run that diverges.

Each case copies one trained model directory (2 steps) and runs `runners/train.py` on it with
the flags a user types (in this process: `runner_calls.call_runner`; without XLA, whose
compilation of the step is most of a tiny run's time and not what is tested here). Refusals: exit code, one `error:` line naming the flag, no traceback, the directory
byte for byte unchanged. Accepted changes: one `note:` (training setting) or `warning:` (memory
restarted) line each, the run finishes, and flags.txt keeps the first start's flags.
"""
import hashlib
import json
import os
import shutil

import pytest

import txl_tf
from runner_calls import call_runner
from tiny import train_flags
from txl_tf.model.config import ConfigError
from txl_tf.commands.train_options import TrainError, TrainOptions
from txl_tf.commands.train_options import checked

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

# One layer: what a resumed run refuses, notes or restarts does not depend on the stacking.
FLAGS = train_flags(n_layer=1) + ["--per_host_train_bsz=4", "--dataset=synthetic", "--data_dir=D",
                       "--warmup_steps=1", "--steps_per_loop=2", "--log_steps=2",
                       "--save_steps=2", "--eval_steps=0", "--max_eval_batches=1",
                       "--jit_compile=false"]


def train(*args, cwd):
    return call_runner("train", FLAGS + list(args), cwd=cwd)


def snapshot(directory):
    out = {}
    for root, _, names in os.walk(directory):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                out[os.path.relpath(os.path.join(root, name), directory)] = hashlib.sha256(
                    f.read()).hexdigest()
    return out


def lines(text, prefix):
    return [line for line in text.splitlines() if line.startswith(prefix)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume_changes")
    done = train("--model_dir=M", "--train_steps=2", cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture
def copy(trained):
    """(root, name) of a fresh copy of the trained model directory beside D."""
    name = f"M-{len(os.listdir(trained))}"
    shutil.copytree(trained / "M", trained / name)
    return trained, name


def check_refused(proc, code, *words):
    assert proc.returncode == code, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = lines(proc.stderr, "error:")
    assert len(errors) == 1 and all(w in errors[0] for w in words), proc.stderr


def test_diverging_run_ends_with_one_line_and_keeps_the_last_good_checkpoint(copy):
    root, name = copy
    before = snapshot(root / name)
    proc = train(f"--model_dir={name}", "--train_steps=8", "--learning_rate=1e30", cwd=root)
    check_refused(proc, 1, "the training loss became", "--learning_rate")
    assert txl_tf.storage.model_files.latest_checkpoint(str(root / name)).endswith("ckpt-2")
    after = snapshot(root / name)
    kept = ("ckpt-", "checkpoint", "memory")  # ckpt-2, its memory and the state file stay
    assert {k: v for k, v in after.items() if k.startswith(kept)} == {
        k: v for k, v in before.items() if k.startswith(kept)}
    assert not os.path.exists(root / name / ".lock")


@pytest.mark.parametrize("flag", ["--learning_rate=nan", "--dropout=inf", "--clip=-inf",
                                  "--min_lr_ratio=nan"])
def test_non_finite_float_flags_are_refused(tmp_path, flag):
    proc = train("--model_dir=M", flag, cwd=tmp_path)
    check_refused(proc, 2, flag.split("=")[0], "finite")
    assert os.listdir(tmp_path) == []


def test_library_refuses_non_finite_values():
    with pytest.raises(TrainError, match=r"--learning_rate must be a finite number in \(0, "):
        checked(TrainOptions(learning_rate=float("nan")))
    with pytest.raises(ConfigError, match=r"init_std must be a finite number in \(0, inf\)"):
        txl_tf.TransformerXLConfig(n_token=10, init_std=float("inf"))


def test_changed_tgt_len_is_refused_before_anything_is_written(copy):
    root, name = copy
    before = snapshot(root / name)
    proc = train(f"--model_dir={name}", "--train_steps=4", "--tgt_len=32", cwd=root)
    check_refused(proc, 2, "--tgt_len=32", "16")
    assert snapshot(root / name) == before


def test_changed_model_shape_is_refused_before_anything_is_written(copy):
    root, name = copy
    before = snapshot(root / name)
    proc = train(f"--model_dir={name}", "--train_steps=4", "--d_inner=48", cwd=root)
    check_refused(proc, 2, "d_inner")
    assert snapshot(root / name) == before


@pytest.mark.parametrize("change,shape", [("--mem_len=24", "4 x 24"),
                                          ("--per_host_train_bsz=8", "8 x 16")])
def test_changed_memory_shape_restarts_the_memory_with_one_warning(copy, change, shape):
    root, name = copy
    proc = train(f"--model_dir={name}", "--train_steps=4", change, cwd=root)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    warnings = lines(proc.stdout, "warning:")
    assert len(warnings) == 1 and f"this run {shape}" in warnings[0], proc.stdout
    assert "4 streams x 16 positions" in warnings[0]
    assert txl_tf.storage.model_files.latest_checkpoint(str(root / name)).endswith("ckpt-4")
    history = (root / name / "flags.txt").read_text()
    first = history.index("--per_host_train_bsz=4")
    assert history.index(change) > first and history.count("# run started") == 2


def test_changed_training_settings_are_noted_one_line_each(copy):
    root, name = copy
    proc = train(f"--model_dir={name}", "--train_steps=4", "--dropout=0.25", "--half_loss",
                 "--clip=0.5", cwd=root)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    notes = lines(proc.stdout, "note: resuming at step 2")
    assert notes == ["note: resuming at step 2 with --dropout=0.25 (was 0.0).",
                     "note: resuming at step 2 with --half_loss=true (was false).",
                     "note: resuming at step 2 with --clip=0.5 (was 0.25)."], proc.stdout
    history = (root / name / "flags.txt").read_text()
    assert history.index("--nohalf_loss") < history.index("--half_loss\n")
    assert history.index("--clip=0.25") < history.index("--clip=0.5")
    assert txl_tf.load_config(str(root / name)).dropout == 0.25


def test_data_of_another_vocabulary_is_refused_before_anything_is_written(copy):
    """The run's record says it was trained on another vocabulary (of the same size) than
    --data_dir holds."""
    root, name = copy
    info_path = root / name / "corpus-info.json"
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps(dict(info, vocab_checksum="0" * 16)))
    before = snapshot(root / name)
    proc = train(f"--model_dir={name}", "--train_steps=4", cwd=root)
    check_refused(proc, 2, "--data_dir=D holds vocabulary", "0" * 16, "give the run's --data_dir")
    assert snapshot(root / name) == before
