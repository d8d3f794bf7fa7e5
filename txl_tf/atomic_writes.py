"""Atomic writes of the `txl_tf` package: a file or a whole directory appears complete or not at
all (the one atomic writer of the package; `tf_records/atomic.py` is that of `tf_records`).

Temporaries are written beside their target and renamed into place (a rename is atomic on a
local or POSIX file system); they are opened normally, so the umask applies, and deleted when the
write fails.

Example:
  >>> write_json_atomic("runs/book/config.json", {"d_model": 512})
"""
import contextlib
import json
import os
import shutil
import uuid

TMP_PREFIX = ".tmp-"  # temporary files of an atomic write; a name no other file of model_dir has


def write_text_atomic(path: str, text: str) -> None:
    """Write `text` through a temporary file in the same directory, then rename it into place:
    readers see the old file or the new one, never a part. The temporary file is
    `.tmp-<pid>-<random>-<name>` (opened with "x", not mkstemp whose files are 0600: the umask
    applies) and is removed when the write fails.

    Raises:
      OSError: the write failed (its `filename` is `path`, also for e.g. ENOSPC from write()).
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory,
                       f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex}-{os.path.basename(path)}")
    try:
        with open(tmp, "x") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(error, OSError) and error.filename is None:
            raise OSError(error.errno, error.strerror, path) from None
        raise


def write_json_atomic(path: str, payload) -> None:
    """Write `payload` as indented, key-sorted JSON with `write_text_atomic`."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def atomic_directory(path: str, tmp_name: str, old_name: str):
    """Write a whole directory, then swap it in as `path`: readers see the old one or the new
    one, never a part.

    Yields an empty directory `tmp_name` beside `path` (made with the umask). When the block
    ends normally, a previous `path` is renamed to `old_name`, the new directory to `path`, and
    the old one deleted (a process killed between the two renames leaves `old_name`, from which
    the caller may restore `path`). When the block or the swap fails, the new directory is
    deleted and the error raised.
    """
    parent = os.path.dirname(os.path.abspath(path))
    tmp, old = os.path.join(parent, tmp_name), os.path.join(parent, old_name)
    os.makedirs(parent, exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp)  # not mkdtemp (0700): the umask applies, as to every file of a model_dir
    try:
        yield tmp
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(path):
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
