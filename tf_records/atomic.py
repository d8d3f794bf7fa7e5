"""Atomic file writes: write to a temporary name in the same directory, then `os.replace`.

An interrupted or failed write never leaves a half-written file under the final name; the
temporary file a killed writer left is removed by the next write of the same file. Files are
created with mode `0o666` minus the process umask (0644 under the usual 022), so a data
directory shared with other users stays readable. A write that fails because the directory is
read-only or its disk is full raises `DataDirError` naming the
directory.
"""
import contextlib
import errno
import glob
import json
import os
import secrets

from tf_records.errors import DataDirError, RecordsCorruptError, StorageError
from untrusted_files import reading
from untrusted_files import schema as untrusted_schema

_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def storage_error(error, path, what=None):
    """The `StorageError` for a write of `path` that failed on a full or read-only disk.

    Args:
      error: the exception raised by the write (`OSError` or a TensorFlow `OpError`).
      path: the file being written (or, with `what`, the directory being created).
      what: the role of the directory being created (e.g. "data_dir"), or None for a file.

    Returns:
      A `StorageError` naming the directory and the fix, or None for any other failure.
    """
    code, text = getattr(error, "errno", None), str(error)
    path = os.path.abspath(path)
    directory, name = (os.path.dirname(path), os.path.basename(path)) if what is None else (
        path, None)
    doing = f"writing {name}" if name else f"creating {what} {path}"
    if (code in (errno.ENOSPC, errno.EDQUOT) or "No space left" in text
            or ("requested and" in text and "written" in text)):  # numpy's short-write message
        return StorageError(
            f"no space left on {directory} while {doing} (disk full); nothing was left "
            "half-written. Free some space there or use another directory.")
    if code in _READ_ONLY or "Read-only file system" in text or "Permission denied" in text:
        reason = "read-only" if code == errno.EROFS or "Read-only" in text else "not writable"
        where = directory if name else f"the directory holding {path}"
        return StorageError(
            f"{where} is {reason}: cannot {'write ' + name if name else 'create it'}. Make it "
            "writable, or use another directory (--data_dir) and prepare the data there.")
    return None


def ensure_dir(path, what="data_dir"):
    """Creates directory `path` (and its parents) if needed.

    Raises:
      DataDirError: `path` (or a parent) is a file, or the directory cannot be created.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise DataDirError(f"{what} {path} is a file, not a directory; pass a directory (it is "
                           "created when missing).")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        cause = ("a symbolic link loop" if error.errno == errno.ELOOP else
                 "a symbolic link to nothing" if os.path.islink(path) else "a parent is a file?")
        raise (storage_error(error, path, what) or DataDirError(
            f"cannot create {what} {path}: {error.strerror or error} ({cause}); pass "
            "another directory.")) from None


def new_temp(directory, name):
    """Creates an empty temporary file `.<name>.<pid>-<random>.tmp` in `directory`; returns its
    path.

    Unlike `tempfile.mkstemp` (always mode 0600), the file gets `0o666` minus the umask. The pid
    in the name tells `remove_stale_temps` whose it is.
    """
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise (storage_error(error, os.path.join(directory, name)) or error) from None
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name for {name} in {directory}")


def remove_stale_temps(directory, name):
    """Removes the temporary files of `name` a killed writer left in `directory`.

    They may be as large as the file itself and would otherwise fill the disk. The temporary
    files of a process still running (another run writing the same file) are left alone.
    """
    pattern = os.path.join(glob.escape(directory), f".{glob.escape(name)}.*.tmp")
    for stale in glob.glob(pattern):
        owner = os.path.basename(stale)[len(name) + 2:-4].split("-")[0]
        if owner.isdigit() and _running(int(owner)):
            continue
        with contextlib.suppress(OSError):
            os.remove(stale)


def _running(pid: int) -> bool:
    """Whether process `pid` exists (this one included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


@contextlib.contextmanager
def atomic_paths(paths, errors=(OSError,)):
    """Yields temporary paths beside `paths`; renames them all only if the block succeeds.

    Args:
      paths: the final file paths (their directories are created).
      errors: exception types of a failed write translated by `storage_error` (e.g. also
        `tf.errors.OpError` for TensorFlow's file writers).

    Raises:
      StorageError: a write failed because the disk is full or the directory read-only;
        nothing is left under a final name, and every temporary file is removed.
    """
    paths = [os.fspath(p) for p in paths]
    temps = []
    try:
        for path in paths:
            directory = os.path.dirname(os.path.abspath(path))
            ensure_dir(directory, "directory")
            remove_stale_temps(directory, os.path.basename(path))  # a killed writer's
            temps.append(new_temp(directory, os.path.basename(path)))
        yield list(temps)
        while temps:
            os.replace(temps[0], paths[len(paths) - len(temps)])
            temps.pop(0)
    except BaseException as error:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
        done = len(paths) - len(temps)
        path = paths[min(done, len(paths) - 1)] if paths else ""
        translated = storage_error(error, path) if isinstance(error, errors) else None
        if translated is not None:
            raise translated from None
        raise


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; renames it to `path` only if the block succeeds.

    On any exception the temporary file is removed and the exception propagates (as a
    `StorageError` when the disk is full or read-only).
    """
    with atomic_paths([path]) as (tmp,):
        yield tmp


def write_bytes(path, data: bytes):
    """Atomically writes `data` to `path`."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_text(path, text: str):
    """Atomically writes UTF-8 `text` to `path`."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path, obj):
    """Atomically writes `obj` as indented, key-sorted JSON (one trailing newline)."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path, fix="delete it and rerun runners/prepare_data.py", required=(),
              schema=None, max_bytes=reading.MAX_JSON_BYTES):
    """Reads a JSON object written by `write_json`, as a file from elsewhere
    (`untrusted_files.reading`: a regular file inside its directory, bounded, UTF-8, nesting
    bounded).

    Args:
      path: the file.
      fix: what the error message tells the user to do about a damaged file.
      required: keys the object must hold.
      schema: an `untrusted_files.schema.Obj` the object must also fit (types and ranges).
      max_bytes: the largest file read.

    Returns:
      The dict.

    Raises:
      RecordsCorruptError: the file is a link outside its directory, not a regular file, too
        large, not UTF-8 JSON, not an object, lacks a required key or does not fit `schema`.
      FileNotFoundError: the file does not exist.
    """
    path = os.fspath(path)
    spec = schema if schema is not None else untrusted_schema.Obj({}, required=required)
    if schema is not None and required:
        spec = untrusted_schema.Obj(schema.fields, required=tuple(required) + schema.required)
    return reading.read_json(path, inside=os.path.dirname(os.path.abspath(path)),
                             max_bytes=max_bytes, error=RecordsCorruptError, fix=fix,
                             schema=spec)
