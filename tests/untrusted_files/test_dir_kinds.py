"""Directories have a kind (data, model, preset, export): each command writes only into
directories of the kind it makes, refused in one place before anything is written, and
suggestions name only directories of the right kind."""
import os
import subprocess
import sys

import pytest
from absl import app

import tf_records
from causal_lm_support import model_dir as make_model_dir
from runners.cli.paths import check_data_dir, check_directories
from tf_records.errors import DataDirError
from tf_records.prepared_data import PreparedData
from tf_records.records.layout import RecordLayout
from tiny import SYNTHETIC
from txl_tf.causal_lm.presets.from_model_dir import preset_from_model_dir
from txl_tf.causal_lm.presets.writing import check_target
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.commands.import_weights import check_new_model_dir
from txl_tf.convert.errors import WeightImportError
from txl_tf.serving.saved_model_writer import ExportInputError, check_export_dir
from untrusted_files import dir_kinds

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = (dir_kinds.DATA, dir_kinds.MODEL, dir_kinds.PRESET, dir_kinds.EXPORT)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One directory of each kind, made by the command that makes it (the export: its
    markers)."""
    root = tmp_path_factory.mktemp("kinds")
    tf_records.prepare("synthetic", str(root / "data"), download=False, progress=False,
                       **SYNTHETIC)
    make_model_dir(root / "model")
    preset_from_model_dir(str(root / "model"), str(root / "preset"))
    (root / "export" / "1").mkdir(parents=True)
    (root / "export" / "1" / "saved_model.pb").write_bytes(b"")
    (root / "export" / "models.config").write_text("")
    return root


def snapshot(directory):
    out = {}
    for top, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(top, name)
            out[path] = os.path.getsize(path)
    return out


def test_each_kind_is_recognised(made):
    assert {kind: dir_kinds.kind_of(made / kind) for kind in KINDS} == {k: k for k in KINDS}
    assert dir_kinds.kind_of(made / "missing") is None


# (what writes, the kind it makes, call(directory))
WRITERS = [
    ("tf_records.prepare", dir_kinds.DATA, DataDirError,
     lambda d: tf_records.prepare("synthetic", str(d), download=False, progress=False,
                                  **SYNTHETIC)),
    ("PreparedData.ensure_records", dir_kinds.DATA, DataDirError,
     lambda d: PreparedData(str(d)).ensure_records({"valid": RecordLayout(8, 2)})),
    ("import_weights model_dir", dir_kinds.MODEL, WeightImportError,
     lambda d: check_new_model_dir(str(d))),
    ("export_dir", dir_kinds.EXPORT, ExportInputError, lambda d: check_export_dir(str(d))),
    ("save_to_preset", dir_kinds.PRESET, CausalLMInputError,
     lambda d: check_target(str(d), str(d))),
] + [(f"runner --{flag}", kind, app.UsageError,
      lambda d, flag=flag: check_directories(**{flag: str(d)}))
     for flag, kind in (("data_dir", dir_kinds.DATA), ("model_dir", dir_kinds.MODEL),
                        ("export_dir", dir_kinds.EXPORT), ("preset_dir", dir_kinds.PRESET))]
CASES = [(w, other) for w in WRITERS for other in KINDS if other != w[1]]


@pytest.mark.parametrize("writer, other", CASES,
                         ids=[f"{w[0]}-into-{other}" for w, other in CASES])
def test_a_command_never_writes_into_another_kind(made, writer, other):
    name, kind, error, call = writer
    before = snapshot(made / other)
    with pytest.raises(error, match=f"is {dir_kinds.DESCRIPTIONS[other].split(' (')[0]}") as e:
        call(made / other)
    assert "\n" not in str(e.value)
    assert snapshot(made / other) == before


@pytest.mark.parametrize("writer", WRITERS, ids=[w[0] for w in WRITERS])
def test_its_own_kind_and_a_new_directory_pass_the_check(made, writer, tmp_path):
    _, kind, _, _ = writer
    dir_kinds.check_kind(made / kind, kind, "x")
    dir_kinds.check_kind(tmp_path / "new", kind, "x")


def test_the_nearest_prepared_directory_is_a_data_directory(made, monkeypatch):
    """A mistyped --data_dir beside a model directory whose name is nearer names the data
    directory, never the model's."""
    monkeypatch.chdir(made)
    with pytest.raises(app.UsageError) as error:
        check_data_dir("modl", dataset_given=False, default="data/default")
    assert "did you mean --data_dir=data?" in str(error.value)


def test_train_with_a_model_directory_as_data_dir_writes_nothing(made, tmp_path):
    """The named case: `train.py --data_dir=<a trained model's directory> --model_dir=new`
    once rebuilt a corpus inside the other run's directory."""
    before = snapshot(made / "model")
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "runners", "train.py"),
                           f"--data_dir={made / 'model'}", f"--model_dir={tmp_path / 'new'}",
                           "--dataset=synthetic"], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is a model directory" in lines[0], lines
    assert snapshot(made / "model") == before
    assert not (tmp_path / "new").exists()
