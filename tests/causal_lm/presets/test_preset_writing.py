"""Writing a preset (presets/writing.py): saving again replaces it whole, and replacing it loses
nothing: the user's files are refused, a save killed by SIGKILL is undone by the next load or
save, a full disk leaves the old preset and one line."""
import errno
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import txl_tf
from causal_lm_support import REPO, causal_lm, log_probs, model_dir
from txl_tf.causal_lm.errors import CausalLMInputError, CausalLMRuntimeError
from txl_tf.storage import model_dir_layout as layout
from txl_tf.causal_lm.presets import writing
from txl_tf.causal_lm.presets.loading import load_preset
from txl_tf.causal_lm.presets.writing import save_to_preset


def test_saving_again_replaces_the_preset_and_a_model_without_vocabulary(tmp_path):
    _, model = model_dir(tmp_path / "m", "byte")
    preset = save_to_preset(causal_lm(model), tmp_path / "p")
    assert layout.PRESET_PREPROCESSOR_FILE not in os.listdir(preset)
    _, other = model_dir(tmp_path / "m2", "byte", seed=1)
    save_to_preset(causal_lm(other), preset)
    backbone, preprocessor = load_preset(preset)
    assert preprocessor is None
    np.testing.assert_array_equal(log_probs(backbone), log_probs(other))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]  # no temporaries left



def test_a_preset_holding_the_users_files_is_not_replaced(tmp_path):
    path, model = model_dir(tmp_path / "m", "byte")
    preset = save_to_preset(causal_lm(model), tmp_path / "p")
    (tmp_path / "p" / "notes.txt").write_text("my notes")
    (tmp_path / "p" / "data").mkdir()
    (tmp_path / "p" / "data" / "train.csv").write_text("a,b\n")
    _, other = model_dir(tmp_path / "m2", "byte", seed=1)
    with pytest.raises(CausalLMInputError, match=r"holds files that are not the preset's "
                                                 r"\(data, notes.txt\).*move them out") as error:
        save_to_preset(causal_lm(other), preset)
    assert "\n" not in str(error.value)
    assert (tmp_path / "p" / "notes.txt").read_text() == "my notes"
    assert (tmp_path / "p" / "data" / "train.csv").read_text() == "a,b\n"
    np.testing.assert_array_equal(log_probs(load_preset(preset)[0]), log_probs(model))
    os.symlink(tmp_path / "m", tmp_path / "link")
    with pytest.raises(CausalLMInputError, match="a file or a link"):
        save_to_preset(causal_lm(other), tmp_path / "link")
    assert sorted(os.listdir(tmp_path / "m")) == sorted(os.listdir(path))


KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    from causal_lm_support import causal_lm, model_dir
    from txl_tf.causal_lm.presets.writing import save_to_preset
    preset, model_path, point = sys.argv[1:]
    _, model = model_dir(model_path, "byte", seed=1)
    real_replace = os.replace

    def replace(src, dst):  # the two renames of the swap: preset -> .old, .tmp -> preset
        if point == "before_swap" and src == preset:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)
        if point == "between_renames" and src == preset:
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
    save_to_preset(causal_lm(model), preset)
""")


def killed_save(tmp_path, point):
    """A preset of model seed 0 at tmp_path/p, replaced by a save of seed 1 that is killed
    (SIGKILL) at `point`; returns (preset path, old model, new model)."""
    _, old = model_dir(tmp_path / "m", "byte")
    preset = save_to_preset(causal_lm(old), tmp_path / "p")
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}")
    proc = subprocess.run([sys.executable, "-c", KILLED_SAVE, preset, str(tmp_path / "m2"),
                           point], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == -9, proc.stderr[-3000:]
    return preset, old, txl_tf.load_model(str(tmp_path / "m2"))


@pytest.fixture(scope="module")
def killed_between_renames(tmp_path_factory):
    """A directory left by `killed_save(..., "between_renames")`, made once for the module;
    the tests that go on from it work on copies (`copy_of_killed`)."""
    root = tmp_path_factory.mktemp("killed")
    killed_save(root, "between_renames")
    return root


def copy_of_killed(killed, tmp_path):
    """`killed_save`'s (preset, old model, new model) in a copy of the directory `killed` at
    `tmp_path` (the preset's leftovers named as they were)."""
    shutil.copytree(killed, tmp_path, symlinks=True, dirs_exist_ok=True)
    return (str(tmp_path / "p"), txl_tf.load_model(str(tmp_path / "m")),
            txl_tf.load_model(str(tmp_path / "m2")))


def test_a_save_killed_between_its_renames_is_undone_by_the_next_load(killed_between_renames,
                                                                      tmp_path):
    preset, old, _ = copy_of_killed(killed_between_renames, tmp_path)
    leftovers = sorted(n for n in os.listdir(tmp_path) if n.startswith(".p."))
    assert not os.path.exists(preset) and [n.split("-")[0] for n in leftovers] == [".p.old",
                                                                                   ".p.tmp"]
    backbone, _ = load_preset(preset)  # restores the complete old preset
    np.testing.assert_array_equal(log_probs(backbone), log_probs(old))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]  # the half-swapped new one gone
    assert sorted(os.listdir(preset)) == ["config.json", "metadata.json", "model.weights.h5"]


@pytest.mark.parametrize("point", ["before_swap", "between_renames"])
def test_the_next_save_after_a_killed_one_writes_a_whole_preset(killed_between_renames,
                                                                tmp_path, point):
    preset, old, new = (killed_save(tmp_path, point) if point == "before_swap" else
                        copy_of_killed(killed_between_renames, tmp_path))
    if point == "before_swap":  # the old preset is still in place
        np.testing.assert_array_equal(log_probs(load_preset(preset)[0]), log_probs(old))
    save_to_preset(causal_lm(new), preset)
    np.testing.assert_array_equal(log_probs(load_preset(preset)[0]), log_probs(new))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]


def test_a_full_disk_during_a_save_leaves_the_old_preset_and_one_line(tmp_path, monkeypatch):
    _, old = model_dir(tmp_path / "m", "byte")
    preset = save_to_preset(causal_lm(old), tmp_path / "p")
    _, new = model_dir(tmp_path / "m2", "byte", seed=1)

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(writing, "write_json_atomic", full)
    with pytest.raises(CausalLMRuntimeError, match=r"cannot write the preset .* \(no "
                                                           "space left on the device\)") as error:
        save_to_preset(causal_lm(new), preset)
    assert "\n" not in str(error.value) and error.value.exit_code == 1
    monkeypatch.undo()
    np.testing.assert_array_equal(log_probs(load_preset(preset)[0]), log_probs(old))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]


FULL_DISK = textwrap.dedent("""
    import sys
    from causal_lm_support import causal_lm, model_dir
    from txl_tf.causal_lm.presets.writing import save_to_preset
    from txl_tf.causal_lm.errors import CausalLMRuntimeError
    _, new = model_dir(sys.argv[2], "byte", seed=1, d_model=32, d_inner=64)
    try:
        save_to_preset(causal_lm(new), sys.argv[1])
    except CausalLMRuntimeError as error:
        print("error:", error)
        sys.exit(1)
""")


def test_a_really_full_disk_gives_one_line_and_no_crash(tmp_path):
    """A tmpfs just big enough for the old preset (root only): HDF5 never writes there."""
    mount = tmp_path / "small"
    mount.mkdir()
    _, old = model_dir(tmp_path / "m", "byte")
    size = sum(-(-os.path.getsize(os.path.join(tmp_path / "m", n)) // 4096) for n in
               os.listdir(tmp_path / "m")) * 4096 + 64 * 1024
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here (not root)")
    try:
        preset = save_to_preset(causal_lm(old), mount / "p")
        env = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}")
        proc = subprocess.run([sys.executable, "-c", FULL_DISK, preset, str(tmp_path / "m2")],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 1, proc.stderr[-3000:]  # not -11 (SIGSEGV)
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        line, = proc.stdout.strip().splitlines()
        assert "no space left on the device" in line
        np.testing.assert_array_equal(log_probs(load_preset(preset)[0]), log_probs(old))
        assert os.listdir(mount) == ["p"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)
