"""Ctrl-C during `runners/train.py` (txl_tf/training/interruption.py): the first SIGINT saves
a checkpoint of the step reached and says how to resume (exit code 130), however many copies of
it arrive at once (two kills within milliseconds; `timeout`, which forwards a signal to its
child and its group again, signalled as a whole group as a terminal does); a second one, after
`DUPLICATE_WINDOW_SECONDS`, exits at once, without saving. Real processes, real signals."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import txl_tf
from tiny import SYNTHETIC_FLAGS, train_flags
from txl_tf.training.interruption import DUPLICATE_WINDOW_SECONDS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Long enough never to end by itself; loops of 2 steps, each logged; no periodic save. Without
# XLA, whose compilation of the step was most of each run (the loop is one `tf.function` either
# way; the compiled step: tests/training/test_jit_compile.py). One layer: what a signal stops
# does not depend on the stacking of layers, and tracing a second one was most of the start-up
# after TensorFlow's.
RUN = ["--dataset=synthetic", "--per_host_train_bsz=4", "--warmup_steps=1",
       "--train_steps=1000000", "--steps_per_loop=2", "--log_steps=2", "--save_steps=0",
       "--eval_steps=0", "--max_eval_batches=1", "--jit_compile=false", *train_flags(n_layer=1),
       *SYNTHETIC_FLAGS]


def start(model_dir, data_dir, *extra, wrapper=()):
    """runners/train.py (under `wrapper`, e.g. `timeout 600`), in a process group of its own."""
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(
        [*wrapper, sys.executable, os.path.join(REPO, "runners", "train.py"),
         f"--model_dir={model_dir}", f"--data_dir={data_dir}", *RUN, *extra], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def press_ctrl_c_with_copies(process, how, signum=signal.SIGINT):
    """One press that reaches train.py more than once: two kills within milliseconds, or the
    whole group's signal (as a terminal sends it) that `timeout` then forwards again."""
    if how == "two kills":
        process.send_signal(signum)
        process.send_signal(signum)
    else:
        os.killpg(process.pid, signum)


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


# One process per way the copies arrive, each with one of the two signals (one handler, keyed
# by the signal: txl_tf/training/interruption.py); two SIGINT kills are also the first press of
# test_second_ctrl_c_exits_at_once_without_saving.
@pytest.mark.parametrize("how,name", [("two kills", "SIGTERM"),
                                      ("the group of `timeout 600`", "SIGINT")])
def test_first_ctrl_c_saves_a_checkpoint_and_says_how_to_resume(tmp_path, synthetic_data_dir,
                                                                 how, name):
    model_dir = tmp_path / "model"
    process = start(model_dir, synthetic_data_dir,
                    wrapper=("timeout", "600") if "timeout" in how else ())
    wait_for_steps(process)
    assert txl_tf.latest_checkpoint(str(model_dir)) is None  # nothing saved before the signal
    press_ctrl_c_with_copies(process, how, signal.Signals[name])
    code, _, err = finish(process)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err
    assert f"{name}: stopping after the current loop of steps to save a checkpoint" in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err[-3000:]
    step = int(txl_tf.latest_checkpoint(str(model_dir)).rsplit("-", 1)[1])
    assert step >= 4 and step % 2 == 0  # at a loop boundary, after the lines read
    assert errors[0] == (f"error: interrupted ({name}) at step {step} of 1000000; a checkpoint "
                         f"of step {step} is saved in {model_dir}: run the same command to "
                         "resume from it.")


def test_second_ctrl_c_exits_at_once_without_saving(tmp_path, synthetic_data_dir):
    """Both presses come while one long compiled loop runs (no heartbeat cuts it): the run
    cannot reach a loop boundary, so only the second press can end it; the copies of the first
    do not."""
    model_dir = tmp_path / "model"
    process = start(model_dir, synthetic_data_dir, "--steps_per_loop=100000",
                    "--log_steps=100000", "--log_seconds=0")
    for line in process.stdout:  # the last line before the first loop
        if line.startswith("duration estimate"):
            break
    threading.Thread(target=process.stdout.read, daemon=True).start()  # never a full pipe
    press_ctrl_c_with_copies(process, "two kills")
    for line in process.stderr:  # the acknowledgement comes at once, mid-loop
        if line.startswith("SIGINT: stopping after the current loop"):
            break
    time.sleep(DUPLICATE_WINDOW_SECONDS + 0.5)
    assert process.poll() is None, process.stderr.read()[-3000:]  # the copy was no second press
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=300)
    err = process.stderr.read()
    assert code == 130, err[-3000:]
    assert "error: SIGINT again: exited at once, without saving" in err, err[-3000:]
    assert txl_tf.latest_checkpoint(str(model_dir)) is None
