"""Atomic file writes: write to a temporary name in the same directory, then ``os.replace``.

An interrupted or failed write never leaves a half-written file under the final name.
"""
import contextlib
import json
import os
import tempfile


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside ``path``; renames it to ``path`` only if the block succeeds.

    On any exception the temporary file is removed and the exception propagates.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def write_bytes(path, data: bytes):
    """Atomically writes ``data`` to ``path``."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_text(path, text: str):
    """Atomically writes UTF-8 ``text`` to ``path``."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path, obj):
    """Atomically writes ``obj`` as indented, key-sorted JSON (one trailing newline)."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path):
    """Reads a JSON file written by :func:`write_json`."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)
