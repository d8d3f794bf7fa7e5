"""Every runner handles SIGINT and SIGTERM through the one handler (`runners/cli/app.py` runs
`main` under `txl_tf.training.interruption.handling_signals`): outside the training loop, the
first press (however many copies of it) stops `main` with one line and exit code 130. In-process:
`main` signals its own process. The runners themselves, as subprocesses, are in
tests/training/test_interrupt.py and tests/runners/test_interrupt_prepare.py."""
import glob
import os
import re
import signal
import time

import pytest

from runners.cli import app, errors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RUNNERS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "runners", "*.py"))
                 if re.search(r"^if __name__ == ['\"]__main__['\"]:", open(p).read(), re.M))


def test_the_runners_are_found():
    assert {"train.py", "evaluate.py", "generate.py", "export.py", "prepare_data.py",
            "import_weights.py", "recl.py", "ablation.py"} <= set(RUNNERS)


@pytest.mark.parametrize("runner", RUNNERS)
def test_every_runner_runs_its_main_through_cli_run(runner):
    with open(os.path.join(REPO, "runners", runner)) as f:
        source = f.read()
    guard = source[re.search(r"^if __name__ == ['\"]__main__['\"]:", source, re.M).start():]
    assert re.search(r"\bcli\.run\(main\b", guard), f"runners/{runner} bypasses cli.run"


def stopped_with_one_line(main, capsys, name):
    """Runs `main` as a runner does (`cli.run`'s wrapper): it must exit 130 with the one error
    line of `name` and one acknowledgement of the press."""
    with pytest.raises(SystemExit) as exited:
        app._main_with_one_error_line(main)(["runner"])
    assert exited.value.code == errors.INTERRUPTED
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("error:")] == [
        f"error: interrupted ({name}) before the work was done; nothing was left half-written: "
        "run the same command again."]
    assert sum(line.startswith(f"{name}: stopping;") for line in err) == 1  # one press


@pytest.mark.parametrize("name,copies", [("SIGTERM", 1), ("SIGTERM", 3), ("SIGINT", 2)])
def test_a_press_outside_the_loop_stops_main_with_one_line(capsys, name, copies):
    reached = []

    def main(argv):
        for _ in range(copies):
            os.kill(os.getpid(), signal.Signals[name])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # Python code: the stop comes at once
            time.sleep(0.01)
        reached.append("end")

    # The disposition the process started with: a background job of a shell without job
    # control (`cmd &` in a script) starts with SIGINT ignored.
    before = signal.getsignal(signal.Signals[name])
    stopped_with_one_line(main, capsys, name)
    assert not reached
    assert signal.getsignal(signal.Signals[name]) == before  # the handler found is restored


def _swallowing(swallows):
    """Work that loses an `Interrupted` as C code that clears Python's errors does (CPython's
    `abc.register` lost one while data was prepared), `swallows` times at most; returns how
    many it lost."""
    from txl_tf.training.interruption import Interrupted
    lost = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            time.sleep(0.01)
        except Interrupted:
            if lost == swallows:
                raise
            lost += 1
    return lost


@pytest.mark.parametrize("name,swallows", [("SIGTERM", 1), ("SIGINT", 3)])
def test_a_lost_first_press_is_raised_again(capsys, name, swallows):
    """The first press's `Interrupted`, lost by code that swallows it, is raised again until it
    gets out: the run stops with the one line and exit code 130, never finishes its work."""
    reached = []

    def main(argv):
        os.kill(os.getpid(), signal.Signals[name])
        reached.append(_swallowing(swallows))

    stopped_with_one_line(main, capsys, name)
    assert not reached


def test_a_press_lost_at_the_end_of_the_work_still_stops_the_run(capsys):
    """A first press whose `Interrupted` is lost just before `main` returns: the run ends with
    exit code 130, not as a success (it said it was stopping)."""
    from txl_tf.training.interruption import Interrupted

    def main(argv):
        os.kill(os.getpid(), signal.SIGTERM)
        try:  # every raise in the little work that is left is lost
            for _ in range(5):
                time.sleep(0.01)
        except Interrupted:
            pass
        return 0

    stopped_with_one_line(main, capsys, "SIGTERM")
