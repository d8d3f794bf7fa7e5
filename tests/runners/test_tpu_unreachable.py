"""`train.py --tpu=grpc://...` with nobody answering: an announced wait bounded by
`--tpu_timeout`, then one error line (exit code 1), no traceback, nothing left behind.

Two loopback addresses: a port nobody listens on (refused at once, retried until the timeout)
and a socket that accepts connections but never speaks gRPC (TensorFlow's connection would wait
without end).
"""
import os
import socket
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 1  # --tpu_timeout, seconds (the refused address is retried until it passes)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_listener():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


# Each strategy that reaches for a TPU (auto, given --tpu; tpu) meets one of the two addresses.
# Both runs are processes as a user starts them (their exit status, TensorFlow's connection
# attempt in a fresh process), started together: each mostly waits for its TensorFlow start-up
# and its --tpu_timeout.
CASES = {"refused-auto": ("auto", False), "silent-tpu": ("tpu", True)}


def test_unreachable_tpu_is_announced_then_one_error_line(tmp_path, silent_listener):
    runs = {}
    try:
        for case, (strategy, listening) in CASES.items():
            port = silent_listener if listening else free_port()
            address = f"grpc://127.0.0.1:{port}"
            cwd = tmp_path / case
            cwd.mkdir()
            runs[case] = (address, cwd, subprocess.Popen(
                [sys.executable, os.path.join(REPO, "runners", "train.py"),
                 f"--strategy={strategy}", f"--tpu={address}", f"--tpu_timeout={TIMEOUT}"],
                # the default runs/default, data/...
                cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")))
        for case, (address, cwd, proc) in runs.items():
            stdout, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 1, (case, stderr[-3000:])
            assert "Traceback" not in stderr, case
            assert f"connecting to TPU {address} (up to {TIMEOUT} s; --tpu_timeout) ..." in stdout
            errors = [line for line in stderr.splitlines() if line.startswith("error:")]
            reason = "no answer" if CASES[case][1] else "Connection refused"
            assert errors == [f"error: cannot reach the TPU at --tpu={address} ({reason}) "
                              f"within {TIMEOUT} s; check the address and that the TPU is up, "
                              "or raise --tpu_timeout."], case
            assert os.listdir(cwd) == [], case  # no runs/default, no data dir, not their parents
    finally:
        for _, _, proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
