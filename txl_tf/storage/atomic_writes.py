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
import re
import shutil
import uuid

from txl_tf.storage.model_dir_layout import TMP_PREFIX


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


def swap_names(path: str) -> tuple:
    """(tmp_name, old_name) of this process for `atomic_directory(path, ...)`:
    `.NAME.tmp-PID` and `.NAME.old-PID`, the names `recover_directory` knows."""
    name, pid = os.path.basename(os.path.abspath(path)), os.getpid()
    return f".{name}.tmp-{pid}", f".{name}.old-{pid}"


def running_elsewhere(pid: int) -> bool:
    """Whether process `pid` is another process that still runs (not this one: its own
    leftovers are a killed process's whose pid was reused)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def recover_directory(path: str) -> list:
    """Undo what writers of `path` killed inside `atomic_directory` (names of `swap_names`)
    left beside it; the leftovers of writers still running are left alone.

    A writer killed between its two renames left no `path` and the complete previous
    directory as `.NAME.old-PID`: that one is renamed back to `path` (the newest, if several).
    Every other leftover, `.NAME.tmp-PID` (written whole or not) and `.NAME.old-PID` when
    `path` exists, is deleted.

    Returns:
      [(what, leftover path)] with what "restored" or "removed", in that order.

    Raises:
      OSError: the parent cannot be listed or a leftover renamed.
    """
    parent, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(rf"\.{re.escape(name)}\.(tmp|old)-(\d+)")
    found = {"tmp": [], "old": []}
    if not os.path.isdir(parent):
        return []
    for entry in os.listdir(parent):
        match = pattern.fullmatch(entry)
        if match and not running_elsewhere(int(match.group(2))):
            found[match.group(1)].append(os.path.join(parent, entry))
    done, olds = [], sorted(found["old"], key=os.path.getmtime)
    if olds and not os.path.lexists(path):
        os.replace(olds[-1], path)
        done.append(("restored", olds.pop()))
    for leftover in olds + found["tmp"]:
        shutil.rmtree(leftover, ignore_errors=True)
        done.append(("removed", leftover))
    return done


def swap_directory(tmp: str, path: str, old: str) -> None:
    """The two renames that put the written directory `tmp` in place as `path`: a previous
    `path` is renamed to `old` first (the caller deletes it). When the second rename fails, the
    previous `path` is renamed back and the error raised; a process killed between the renames
    leaves `old`, which `recover_directory` restores when its names are `swap_names`'.

    Raises:
      OSError: a rename failed (e.g. ENOTEMPTY: `path` appeared meanwhile).
    """
    if os.path.lexists(path):
        os.replace(path, old)
    try:
        os.replace(tmp, path)
    except OSError:
        if os.path.lexists(old) and not os.path.lexists(path):
            os.replace(old, path)
        raise


@contextlib.contextmanager
def atomic_directory(path: str, tmp_name: str, old_name: str):
    """Write a whole directory, then swap it in as `path`: readers see the old one or the new
    one, never a part.

    Yields an empty directory `tmp_name` beside `path` (made with the umask). When the block
    ends normally, `swap_directory` renames a previous `path` to `old_name` and the new directory
    to `path`, and the old one is deleted (a process killed between the two renames leaves
    `old_name`, from which `recover_directory` restores `path` when the names are `swap_names`').
    When the block or the swap fails, the new directory is deleted and the error raised.
    """
    parent = os.path.dirname(os.path.abspath(path))
    tmp, old = os.path.join(parent, tmp_name), os.path.join(parent, old_name)
    os.makedirs(parent, exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp)  # not mkdtemp (0700): the umask applies, as to every file of a model_dir
    try:
        yield tmp
        shutil.rmtree(old, ignore_errors=True)
        swap_directory(tmp, path, old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
