"""tests/support/runner_calls.py's `call_runner` runs a runner in the test's process whatever
flags other tests left in absl's global FLAGS, and leaves none of its own behind."""
from absl import app, flags

from runner_calls import call_runner, restore_flags, set_aside_runner_flags
from runners.cli import dataclass_flags
from txl_tf.commands.evaluate_options import EvalOptions


def test_a_runner_runs_beside_the_runner_flags_another_test_defined(tmp_path):
    app.define_help_flags()  # absl's own, defined once per process (call_runner does too)
    fv = flags.FLAGS
    earlier = set_aside_runner_flags(fv)  # what tests before this one left
    before = set(fv)
    dataclass_flags.define_flags(EvalOptions, fv)  # as a test importing a runner does
    theirs = {name: fv[name] for name in set(fv) - before}
    assert "model_dir" in theirs
    try:
        proc = call_runner("evaluate", [f"--model_dir={tmp_path}", "--batch_size=0"],
                           cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("error: --batch_size must be"), \
            proc.stderr
        # the other test's flags are back, the very same objects; none of the call's is left
        assert {name: fv[name] for name in set(fv) - before} == theirs
        assert all(fv[name] is flag for name, flag in theirs.items())
    finally:
        for name in set(fv) - before:
            delattr(fv, name)
        restore_flags(fv, earlier)
