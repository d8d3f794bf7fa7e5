"""A --data_dir that is not prepared is refused before anything is written when preparing it
would be a mistake (runners/cli/paths.py: check_data_dir): a mistyped path without --dataset,
and a new data directory for a run trained on another one."""
import json
import os
import subprocess
import sys

import pytest
from absl import app

from runners.cli.paths import check_data_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def tree(root):
    """Every path under `root` with the bytes of each file."""
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.join(top, name)] = None
        for name in files:
            with open(os.path.join(top, name), "rb") as f:
                out[os.path.join(top, name)] = f.read()
    return out


def train(cwd, *args):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, os.path.join(REPO, "runners", "train.py"), *args],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def prepared(tmp_path):
    """tmp_path with two prepared-looking data directories (data/book, data/builtin) and
    an unprepared one (data/notes, no corpus-info.json)."""
    for name in ("book", "builtin"):
        (tmp_path / "data" / name).mkdir(parents=True)
        (tmp_path / "data" / name / "corpus-info.json").write_text('{"dataset": "text"}')
    (tmp_path / "data" / "notes").mkdir()
    return tmp_path


def test_mistyped_data_dir_names_the_nearest_and_writes_nothing(prepared):
    before = tree(prepared)
    proc = train(prepared, "--data_dir=data/bok")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --data_dir=data/bok is not a "
                                                   "prepared data directory"), lines
    assert "did you mean --data_dir=data/book?" in lines[0]
    assert "--dataset=NAME" in lines[0]
    assert tree(prepared) == before  # no data/bok, no runs/default


def test_existing_run_refuses_a_new_data_dir_before_building_it(prepared):
    model = prepared / "runs" / "book"
    model.mkdir(parents=True)
    (model / "corpus-info.json").write_text(json.dumps(
        {"dataset": "text", "data_dir": str(prepared / "data" / "book")}))
    before = tree(prepared)
    proc = train(prepared, f"--model_dir={model}", "--data_dir=data/other", "--dataset=builtin")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"give --data_dir={prepared / 'data' / 'book'}" in proc.stderr
    assert tree(prepared) == before


@pytest.mark.parametrize("data_dir, dataset_given, refused", [
    ("data/bok", False, True),          # mistyped, no --dataset
    ("data/notes", False, True),        # exists but not prepared
    ("data/bok", True, False),          # --dataset says which corpus to make there
    ("data/builtin2", True, False),
    ("data/book", False, False),        # prepared
    ("data/../data/default", False, False),  # the default, however spelled
])
def test_which_data_dirs_are_refused(prepared, monkeypatch, data_dir, dataset_given, refused):
    monkeypatch.chdir(prepared)
    if refused:
        with pytest.raises(app.UsageError, match="did you mean --data_dir=data/book"):
            check_data_dir(data_dir, dataset_given, "data/default")
    else:
        check_data_dir(data_dir, dataset_given, "data/default")


def test_no_prepared_sibling_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(app.UsageError, match="no prepared data directory is beside it"):
        check_data_dir("nothing/here", False, "data/builtin")
