"""tests/support/shared_dirs.py, the directories a test run makes once and shares read-only:
two xdist workers asking at once get one build, the files are read-only, a change is seen, a
writable copy is writable, and a build that failed is redone."""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

import shared_dirs

SUPPORT = os.path.dirname(os.path.abspath(shared_dirs.__file__))


class Factory:
    """What shared_dirs uses of pytest's tmp_path_factory."""

    def __init__(self, basetemp):
        self.basetemp = basetemp

    def getbasetemp(self):
        return self.basetemp


# One xdist worker (argv: the run directory, the worker's name): its basetemp, then the shared
# directory "thing", built by a build that counts its runs in the run directory and is slow
# enough for the two workers to overlap.
WORKER = textwrap.dedent("""
    import os, pathlib, sys, time
    import shared_dirs

    class Factory:
        def getbasetemp(self):
            return basetemp

    def build(path):
        with open(run / "builds", "a") as f:
            f.write("x")
        time.sleep(1.0)
        os.makedirs(os.path.join(path, "sub"))
        with open(os.path.join(path, "sub", "file"), "w") as f:
            f.write("shared")

    run, name = pathlib.Path(sys.argv[1]), sys.argv[2]
    os.environ["PYTEST_XDIST_WORKER"] = name
    basetemp = run / f"popen-{name}"
    basetemp.mkdir()
    print("\\t".join(shared_dirs.shared_dir(Factory(), "thing", build)))
""")


def test_two_workers_share_one_read_only_build(tmp_path):
    env = dict(os.environ, PYTHONPATH=SUPPORT)
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), name], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in ("gw0", "gw1")]
    results = [w.communicate(timeout=60) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], results
    assert results[0][0] == results[1][0]
    path, recorded = results[0][0].strip().split("\t")
    assert path == str(tmp_path / "shared" / "thing")
    assert (tmp_path / "builds").read_text() == "x"  # one build for both workers
    assert stat.S_IMODE(os.stat(os.path.join(path, "sub", "file")).st_mode) == 0o444
    assert stat.S_IMODE(os.stat(os.path.join(path, "sub")).st_mode) == 0o555
    assert shared_dirs.unchanged(path, recorded)
    copy = shared_dirs.writable_copy(path, tmp_path / "copy")
    with open(os.path.join(copy, "sub", "file"), "a") as f:  # the copy is the owner's
        f.write("!")
    (tmp_path / "copy" / "sub" / "new").write_text("new")
    assert shared_dirs.unchanged(path, recorded)
    os.chmod(os.path.join(path, "sub", "file"), 0o644)
    with open(os.path.join(path, "sub", "file"), "a") as f:  # what root could do anyway
        f.write("!")
    assert not shared_dirs.unchanged(path, recorded)


@pytest.fixture
def one_process_factory(tmp_path, monkeypatch):
    """A tmp_path_factory stand-in of a run without xdist, its basetemp made."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    factory = Factory(tmp_path / "base")
    factory.basetemp.mkdir()
    return factory


def test_without_xdist_the_basetemp_holds_it_and_a_failed_build_is_redone(tmp_path, one_process_factory):
    factory = one_process_factory

    def failing(path):
        open(os.path.join(path, "half"), "w").close()
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        shared_dirs.shared_dir(factory, "thing", failing)
    path, recorded = shared_dirs.shared_dir(factory, "thing", lambda p: open(
        os.path.join(p, "whole"), "w").close())
    assert path == str(tmp_path / "base" / "shared" / "thing")
    assert sorted(os.listdir(path)) == ["whole"] and shared_dirs.unchanged(path, recorded)


def test_read_only_dir_fails_the_fixture_that_holds_it_when_a_test_changed_it(tmp_path, one_process_factory):
    factory = one_process_factory

    def build(path):
        with open(os.path.join(path, "file"), "w") as f:
            f.write("a")

    with shared_dirs.read_only_dir(factory, "kept", build) as path:
        assert open(os.path.join(path, "file")).read() == "a"
    with pytest.raises(AssertionError, match="a test changed the shared directory"):
        with shared_dirs.read_only_dir(factory, "kept", build) as path:
            os.chmod(os.path.join(path, "file"), 0o644)
            with open(os.path.join(path, "file"), "a") as f:  # what root could do anyway
                f.write("!")
