"""Ctrl-C during `runners/train.py` (txl_tf/training/interruption.py): the first SIGINT saves
a checkpoint of the step reached and says how to resume (exit code 130); a second one exits at
once, without saving. Real processes, real signals."""
import os
import signal
import subprocess
import sys
import threading

import txl_tf
from tiny import SYNTHETIC_FLAGS, TRAIN_FLAGS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Long enough never to end by itself; loops of 2 steps, each logged; no periodic save.
RUN = ["--dataset=synthetic", "--per_host_train_bsz=4", "--warmup_steps=1",
       "--train_steps=1000000", "--steps_per_loop=2", "--log_steps=2", "--save_steps=0",
       "--eval_steps=0", "--max_eval_batches=1", *TRAIN_FLAGS, *SYNTHETIC_FLAGS]


def start(model_dir, data_dir, *extra):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(
        [sys.executable, os.path.join(REPO, "runners", "train.py"), f"--model_dir={model_dir}",
         f"--data_dir={data_dir}", *RUN, *extra], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def wait_for_steps(process, steps=4):
    """Reads stdout until a `step N/...` line with N >= steps; returns the lines read."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("step ") and int(line.split()[1].split("/")[0]) >= steps:
            return lines
    raise AssertionError("the run ended before it trained: " + process.stderr.read()[-3000:])


def finish(process):
    """(exit code, rest of stdout, stderr), within 5 minutes."""
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def test_first_ctrl_c_saves_a_checkpoint_and_says_how_to_resume(tmp_path, synthetic_data_dir):
    model_dir = tmp_path / "model"
    process = start(model_dir, synthetic_data_dir)
    wait_for_steps(process)
    assert txl_tf.latest_checkpoint(str(model_dir)) is None  # nothing saved before the signal
    process.send_signal(signal.SIGINT)
    code, _, err = finish(process)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err
    assert "SIGINT: stopping after the current loop of steps to save a checkpoint" in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err[-3000:]
    step = int(txl_tf.latest_checkpoint(str(model_dir)).rsplit("-", 1)[1])
    assert step >= 4 and step % 2 == 0  # at a loop boundary, after the lines read
    assert errors[0] == (f"error: interrupted (SIGINT) at step {step} of 1000000; a checkpoint "
                         f"of step {step} is saved in {model_dir}: run the same command to "
                         "resume from it.")


def test_second_ctrl_c_exits_at_once_without_saving(tmp_path, synthetic_data_dir):
    """Both signals come while one long compiled loop runs (no heartbeat cuts it): the run
    cannot reach a loop boundary, so only the second signal can end it."""
    model_dir = tmp_path / "model"
    process = start(model_dir, synthetic_data_dir, "--steps_per_loop=100000",
                    "--log_steps=100000", "--log_seconds=0")
    for line in process.stdout:  # the last line before the first loop
        if line.startswith("duration estimate"):
            break
    threading.Thread(target=process.stdout.read, daemon=True).start()  # never a full pipe
    process.send_signal(signal.SIGINT)
    for line in process.stderr:  # the acknowledgement comes at once, mid-loop
        if line.startswith("SIGINT: stopping after the current loop"):
            break
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=300)
    err = process.stderr.read()
    assert code == 130, err[-3000:]
    assert "error: SIGINT again: exited at once, without saving" in err, err[-3000:]
    assert txl_tf.latest_checkpoint(str(model_dir)) is None
