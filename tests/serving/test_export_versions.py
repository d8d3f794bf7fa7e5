"""The versions of an export directory (`txl_tf/serving/versions.py`): two exports at
once get distinct versions and both are kept; an export --overwrite killed (SIGKILL) between its
two renames leaves the complete old version, which the next export restores; the leftovers of
killed exports are removed, those of running ones kept."""
import inspect
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from causal_lm_support import causal_lm
from tiny import tiny_model
from txl_tf.causal_lm.serving_export import export
from txl_tf.serving import saved_model_writer as export_command
from txl_tf.serving import versions as export_versions
from txl_tf.serving.server_config import RECORD_FILE
from txl_tf.serving.export_options import INFO_FILE, ExportInputError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}",
           TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")

STAND_IN_FILES = ("saved_model.pb", os.path.join("variables", "variables.index"))


def write_stand_in(path, info, text):
    """A version's files at `path` without a SavedModel: the export info `info` (the real
    one), and STAND_IN_FILES holding `text`."""
    for name in (INFO_FILE,) + STAND_IN_FILES:
        os.makedirs(os.path.join(path, os.path.dirname(name)), exist_ok=True)
    with open(os.path.join(path, INFO_FILE), "w") as f:
        json.dump(info, f)
    for name in STAND_IN_FILES:
        with open(os.path.join(path, name), "w") as f:
            f.write(text)


# A tiny model of `n_layer` layers exported to EXPORT_DIR by a child process; `point` stops it
# on the way:
#   wait:            after its version is reserved, until every name in WAIT_FOR exists
#   between_renames: SIGKILL after the old version was renamed aside, before the new one is in
# Its version holds stand-ins of the SavedModel's files (`write_stand_in`, whose source the
# child is given: saved_model.pb and variables/variables.index read STAND_IN; the export info is
# the real one) instead of a traced SavedModel: what this file checks is which versions are
# reserved, kept, swapped in and recovered, not what a version holds. The exports of the test
# process write the same stand-ins (`stand_in_writes`), but for the real SavedModel of
# test_two_exports_at_once_get_distinct_versions_and_both_are_kept.
EXPORT = textwrap.dedent("""
    import json, os, signal, sys, time
    from causal_lm_support import causal_lm
    from tiny import tiny_model
    from txl_tf.causal_lm.serving_export import export
    from txl_tf.serving import saved_model_writer as export_command
    from txl_tf.serving.export_options import INFO_FILE
    STAND_IN_FILES = ("saved_model.pb", os.path.join("variables", "variables.index"))
""") + inspect.getsource(write_stand_in) + textwrap.dedent("""
    export_dir, n_layer, point, overwrite, version, stand_in = sys.argv[1:7]
    real_replace = os.replace

    def write(module, path, info):
        if point == "wait":
            open(os.path.join(os.path.dirname(export_dir), f"ready-{n_layer}"), "w").close()
            while not all(os.path.exists(p) for p in os.environ["WAIT_FOR"].split(":")):
                time.sleep(0.05)
        write_stand_in(path, info, stand_in)

    def replace(src, dst):
        real_replace(src, dst)
        if point == "between_renames" and src == os.path.join(export_dir, version):
            os.kill(os.getpid(), signal.SIGKILL)

    export_command.write_saved_model, os.replace = write, replace
    model = tiny_model(n_layer=int(n_layer))
    info = export(causal_lm(model), export_dir, text_signatures=False, warmup_requests=0,
                  overwrite=overwrite == "1", version=None if version == "-" else int(version))
    print(json.dumps(info))
""")


STAND_IN = "the child's stand-in"


@pytest.fixture
def stand_in_writes(monkeypatch):
    """The exports of the test process write `write_stand_in`'s files (text: "written here")
    instead of tracing and saving their SavedModel; everything else of the export runs."""
    monkeypatch.setattr(export_command, "write_saved_model",
                        lambda module, path, info: write_stand_in(path, info, "written here"))


def start(export_dir, n_layer, point="", overwrite=False, version=None, wait_for=()):
    env = dict(ENV, WAIT_FOR=":".join(map(str, wait_for)))
    return subprocess.Popen(
        [sys.executable, "-c", EXPORT, str(export_dir), str(n_layer), point,
         "1" if overwrite else "0", "-" if version is None else str(version), STAND_IN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finished(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def export_here(export_dir, n_layer):
    """The export of a tiny model of `n_layer` layers to `export_dir` in this process, as
    EXPORT does it (without stopping): its info."""
    return export(causal_lm(tiny_model(n_layer=n_layer)), str(export_dir),
                  text_signatures=False, warmup_requests=0)


def info_of(export_dir, version):
    with open(os.path.join(export_dir, str(version), "assets.extra", "txl_export.json")) as f:
        return json.load(f)


def complete(export_dir, version):
    path = os.path.join(export_dir, str(version))
    return (os.path.isfile(os.path.join(path, "saved_model.pb"))
            and os.path.isfile(os.path.join(path, "variables", "variables.index")))


def test_two_exports_at_once_get_distinct_versions_and_both_are_kept(tmp_path, monkeypatch):
    """One export in a child process, one in this process: each reserves its version, then
    waits until the other has reserved its own before it writes."""
    export_dir = tmp_path / "txl"
    ready = [tmp_path / "ready-1", tmp_path / "ready-2"]
    other = start(export_dir, 2, "wait", wait_for=ready)
    real_write = export_command.write_saved_model

    def write(module, path, info):
        ready[0].touch()
        while not ready[1].exists() and other.poll() is None:
            time.sleep(0.05)
        real_write(module, path, info)

    monkeypatch.setattr(export_command, "write_saved_model", write)
    try:
        results = [export_here(export_dir, 1), finished(other)]
    finally:
        other.kill()
    assert sorted(r["version"] for r in results) == [1, 2]  # both reserved before writing
    for r in results:
        assert info_of(export_dir, r["version"])["n_layer"] == r["n_layer"]
    here, child = (str(r["version"]) for r in results)
    assert complete(export_dir, here)  # the SavedModel of this process's export, not a stand-in
    assert (export_dir / here / "saved_model.pb").read_bytes() != STAND_IN.encode()
    assert (export_dir / child / "saved_model.pb").read_text() == STAND_IN  # the child's
    assert sorted(os.listdir(export_dir)) == sorted([
        "1", "2", "batching_parameters.txt", "models.config", RECORD_FILE])  # no NAME.new


def test_an_overwrite_killed_between_renames_is_recovered_by_the_next_export(tmp_path,
                                                                           stand_in_writes):
    export_dir = tmp_path / "txl"
    first = export_here(export_dir, 2)
    assert first["version"] == 1
    killed = start(export_dir, 1, "between_renames", overwrite=True, version=1)
    killed.communicate(timeout=600)
    assert killed.returncode == -signal.SIGKILL
    left = sorted(os.listdir(export_dir))
    assert "1" not in left and [n.split("-")[0] for n in left
                                if n.startswith(".") and n != RECORD_FILE] == [
        ".1.old", ".1.tmp"], left
    (new,) = [n for n in left if n.startswith(".1.tmp")]  # written whole, then killed
    assert (export_dir / new / "saved_model.pb").read_text() == STAND_IN
    again = export_here(export_dir, 1)  # restores 1 (the complete old), writes 2
    assert again["version"] == 2
    assert complete(export_dir, 1) and info_of(export_dir, 1)["n_layer"] == 2
    assert complete(export_dir, 2) and info_of(export_dir, 2)["n_layer"] == 1
    assert not [n for n in os.listdir(export_dir) if n.startswith(".") and n != RECORD_FILE]


def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def version_dir(path, marker):
    os.makedirs(path)
    with open(os.path.join(path, "saved_model.pb"), "w") as f:
        f.write(marker)


def test_recovery_restores_a_lost_version_and_removes_only_dead_leftovers(tmp_path):
    dead, alive = dead_pid(), subprocess.Popen(["sleep", "60"])
    try:
        version_dir(tmp_path / f".1.old-{dead}", "old 1")  # 1 missing: restored
        version_dir(tmp_path / f".1.tmp-{dead}", "new 1, maybe half")
        version_dir(tmp_path / "2", "2")
        version_dir(tmp_path / f".2.old-{dead}", "old 2")  # 2 present: removed
        version_dir(tmp_path / f".3.tmp-{alive.pid}", "being written")  # kept, and taken
        version_dir(tmp_path / f".tmp-4-{dead}-replaced", "old 4")  # legacy names
        version_dir(tmp_path / f".tmp-4-{dead}", "new 4")
        export_versions.recover_versions(str(tmp_path))
        assert sorted(os.listdir(tmp_path)) == sorted(["1", "2", "4", f".3.tmp-{alive.pid}"])
        assert (tmp_path / "1" / "saved_model.pb").read_text() == "old 1"
        assert (tmp_path / "2" / "saved_model.pb").read_text() == "2"
        assert (tmp_path / "4" / "saved_model.pb").read_text() == "old 4"
        assert export_versions.next_version(str(tmp_path)) == 5
        with export_versions.reserved_version(str(tmp_path), None) as (version, tmp):
            assert version == 5 and os.path.isdir(tmp)
            assert export_versions.next_version(str(tmp_path)) == 6  # the reservation counts
        assert not os.path.exists(tmp)
    finally:
        alive.kill()
        alive.wait()


def test_a_version_written_meanwhile_is_not_replaced_without_overwrite(tmp_path):
    with export_versions.reserved_version(str(tmp_path), 1) as (version, tmp):
        version_dir(os.path.join(tmp, "x"), "mine")
        version_dir(tmp_path / "1", "theirs")  # another export with --version=1
        with pytest.raises(ExportInputError, match="written by another export meanwhile"):
            export_versions.swap_in(tmp, str(tmp_path), version, overwrite=False)
        assert (tmp_path / "1" / "saved_model.pb").read_text() == "theirs"
        final = export_versions.swap_in(tmp, str(tmp_path), version, overwrite=True)
    assert (tmp_path / "1" / "x" / "saved_model.pb").read_text() == "mine"
    assert final == str(tmp_path / "1") and sorted(os.listdir(tmp_path)) == ["1"]
