"""Directories made once per test run and shared, read-only, by the tests that only read them.

`shared_dir(tmp_path_factory, name, build)` runs `build(path)` once per `pytest` run, in both
pytest-xdist workers together: the first worker to ask builds it under a file lock in the
run's temporary directory (the parent of each worker's basetemp), the other waits for it and
reads the same files. The directory is then made read-only (`chmod`: files 0444, folders 0555)
and its digest recorded; `unchanged(path, digest)` tells whether a test changed it anyway (root
ignores the mode bits, so the conftest fixtures check the digest when the session ends). A
test that changes files works on `writable_copy(path, to)`. A fixture holds one with
`read_only_dir`, which fails the fixture's teardown when a test changed it.

Example:
  >>> path, digest = shared_dir(tmp_path_factory, "trained_byte_model", trained_model_dir)
  >>> with read_only_dir(tmp_path_factory, "word_export", build) as path:
  ...     yield path
"""
import contextlib
import fcntl
import hashlib
import os
import shutil
import stat


def run_root(tmp_path_factory):
    """The temporary directory of this pytest run: shared by the xdist workers (each has its
    own basetemp below it), the basetemp itself without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def digest(path):
    """sha256 (hex) over every file's relative path and bytes under `path`."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            h.update(os.path.relpath(full, path).encode() + b"\0")
            with open(full, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def _set_modes(path, file_mode, dir_mode):
    for root, dirs, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(root, name), file_mode)
        for name in dirs:
            os.chmod(os.path.join(root, name), dir_mode)
    os.chmod(path, dir_mode)


def shared_dir(tmp_path_factory, name, build):
    """(path, digest) of the directory `name` of this run, filled by `build(path)` (a fresh,
    empty directory; what it returns is ignored) the first time any worker asks. Built in
    place (files may record their absolute paths); a build that failed is redone."""
    root = run_root(tmp_path_factory) / "shared"
    root.mkdir(exist_ok=True)
    path, done = root / name, root / f"{name}.sha256"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if path.exists():  # a build that failed half-way
                _set_modes(path, 0o644, 0o755)
                shutil.rmtree(path)
            path.mkdir()
            build(str(path))
            _set_modes(path, 0o444, 0o555)
            done.write_text(digest(path))
    return str(path), done.read_text()


def unchanged(path, recorded):
    """Whether `path` still has the digest `recorded`."""
    return digest(path) == recorded


@contextlib.contextmanager
def read_only_dir(tmp_path_factory, name, build):
    """`shared_dir`'s path for a fixture to yield; when the fixture ends, an AssertionError if a
    test changed the directory."""
    path, recorded = shared_dir(tmp_path_factory, name, build)
    yield path
    assert unchanged(path, recorded), f"a test changed the shared directory {path}"


def writable_copy(path, to):
    """A copy of the shared `path` at `to` that its owner may change; returns `to` as str."""
    shutil.copytree(path, to)
    _set_modes(to, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH, 0o755)
    return str(to)
