"""`fit` with `BackupAndRestore` after the process is killed (SIGKILL, no clean-up): a new
process resumes with the memory of the last backup and ends with the uninterrupted run's
weights and memory.

The killed and the resumed runs are child processes training the model of
`test_fit_callbacks.py` on its finite dataset (an epoch is one pass); the killed one dies in
the middle of its second epoch, after the backup of the first. The uninterrupted run they are
compared with is the same script's training, run in the test's own process while the killed
child starts and trains.
"""
import os
import signal
import subprocess
import sys

import keras
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

CHILD = """
import os, signal, sys
sys.path[:0] = [{support!r}, {here!r}]
import txl_tf  # first: TensorFlow then loads quietly
import keras
import numpy as np
from test_fit_callbacks import EPOCHS, data, new_lm

backup, out, kill_at, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


class Kill(keras.callbacks.Callback):
    batches = 0

    def on_train_batch_begin(self, batch, logs=None):
        Kill.batches += 1
        if self.model.optimizer.iterations.numpy() == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


lm = new_lm(seed)  # another seed than the first run's: the weights must come from the backup
lm.fit(data(), epochs=EPOCHS, verbose=0,
       callbacks=[keras.callbacks.BackupAndRestore(backup), Kill()])
arrays = {{f"w{{i}}": v.numpy() for i, v in enumerate(lm.backbone.trainable_variables)}}
np.savez(out, memory=lm.memory_to_host(), **arrays)
print(Kill.batches)
"""


def start(tmp_path, backup, out, kill_at, seed=1):
    """The child process (a Popen with text pipes; `finish` waits for it)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(support=os.path.join(REPO, "tests", "support"), here=HERE))
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / backup),
                             str(tmp_path / out), str(kill_at), str(seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(proc):
    """The CompletedProcess of `proc` (from `start`), once it ended (killed after 600 s)."""
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


class CountBatches(keras.callbacks.Callback):
    batches = 0

    def on_train_batch_begin(self, batch, logs=None):
        self.batches += 1


def run_here(tmp_path, backup, seed=1):
    """The child's run without a kill, in this process: (batches trained, {name: array} of
    its memory and weights, as the child saves them)."""
    from test_fit_callbacks import EPOCHS, data, new_lm

    lm, count = new_lm(seed), CountBatches()
    lm.fit(data(), epochs=EPOCHS, verbose=0,
           callbacks=[keras.callbacks.BackupAndRestore(str(tmp_path / backup)), count])
    arrays = {f"w{i}": v.numpy() for i, v in enumerate(lm.backbone.trainable_variables)}
    return count.batches, dict(memory=lm.memory_to_host(), **arrays)


def test_killed_fit_resumes_in_a_new_process_with_the_memory(tmp_path):
    from test_fit_callbacks import EPOCHS, STEPS

    # The killed child starts (Python and TensorFlow) while this process trains the reference:
    # they share no file (backup-whole / backup).
    child = start(tmp_path, "backup", "never.npz", STEPS + 2)  # epoch 1, batch 2
    try:
        whole_batches, expected = run_here(tmp_path, "backup-whole")
    finally:
        killed = finish(child)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (tmp_path / "never.npz").exists()
    assert (tmp_path / "backup").is_dir()  # the backup of epoch 0 survived the kill
    resumed = finish(start(tmp_path, "backup", "resumed.npz", -1, seed=2))
    assert resumed.returncode == 0, resumed.stderr
    assert whole_batches == EPOCHS * STEPS
    assert int(resumed.stdout.split()[-1]) == (EPOCHS - 1) * STEPS  # from epoch 1, not 0

    got = np.load(tmp_path / "resumed.npz", allow_pickle=False)
    assert sorted(got.files) == sorted(expected)
    assert np.abs(expected["memory"]).max() > 0  # a memory, not zeros, was carried
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
