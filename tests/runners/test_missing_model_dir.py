"""A model directory without config.json is reported before TensorFlow loads, by every runner
that reads one (runners/cli/paths.py: check_model_dirs): the process ends with the one line and
`tensorflow` was never imported (checked in the process itself, at exit)."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Runs a runner as `python runners/<name>.py` would, then says whether TensorFlow was imported.
PROBE = """
import atexit, runpy, sys
atexit.register(lambda: print("tensorflow imported:", "tensorflow" in sys.modules,
                              file=sys.stderr))
path = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(path, run_name="__main__")
"""


def run_probe(name, *args, cwd):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, "-c", PROBE,
                           os.path.join(REPO, "runners", f"{name}.py"), *args],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name, args", [
    ("evaluate", ["--model_dir={missing}"]),
    ("generate", ["--model_dir={missing}", "--prompt=It was a"]),
    ("export", ["--model_dir={missing}", "--export_dir={tmp}/export"]),
    ("recl", ["--model_dirs={missing}"]),
    ("evaluate", ["--model_dir={empty}"]),  # a directory, but not a model directory
])
def test_missing_model_dir_is_one_line_before_tensorflow(tmp_path, name, args):
    (tmp_path / "empty").mkdir()
    paths = dict(missing=tmp_path / "runs" / "nope", empty=tmp_path / "empty", tmp=tmp_path)
    proc = run_probe(name, *[a.format(**paths) for a in args], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "tensorflow imported: False", proc.stderr[-2000:]
    assert len(lines) == 2 and lines[0].startswith("error: "), lines
    assert "config.json not found" in lines[0] and "not a txl-tf model directory" in lines[0]
    assert not (tmp_path / "export").exists()


def test_the_probe_sees_tensorflow_when_a_runner_loads_it(tmp_path):
    """The probe is not blind: past the check (a config.json is there, if not a valid one),
    the runner imports TensorFlow."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    proc = run_probe("evaluate", f"--model_dir={tmp_path / 'model'}", cwd=tmp_path)
    assert proc.returncode != 0
    assert "tensorflow imported: True" in proc.stderr, proc.stderr[-2000:]
