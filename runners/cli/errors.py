"""Expected failures as one line and an exit code; anything else is a bug and keeps its traceback.

An expected failure is printed as `error: <problem>; <fix>` with an exit code:
  0  success.
  1  runtime failure: no space left on a device, a read-only or not writable path, out of
     memory, a file found damaged during the work (`tf.errors.DataLossError`).
  2  usage error: a bad flag value, a missing or invalid path given by the user, a foreign or
     corrupt input file: the error classes of txl-tf (`ConfigError`, `ModelDirError`,
     `DataError`, `TrainError`, `StrategyError`, `WeightImportError`, ...) and the
     `ValueError`s txl-tf's own code raises to reject an input. An error class of txl-tf
     that reports a failure during the work instead sets the class attribute `exit_code = 1`.
 130 interrupted (Ctrl-C).
"""
import errno
import os
import re
import sys
import traceback

from absl import app, flags

from txl_tf.runtime.error_text import is_disk_full

# Exit codes.
OK, RUNTIME_ERROR, USAGE_ERROR, INTERRUPTED = 0, 1, 2, 130

# The project's own packages: a ValueError raised by their code rejects an input.
_PROJECT_PACKAGES = ("runners", "txl_tf", "tf_records", "__main__")
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The flags that shrink a step, in the order a fix names them; each command has some of them.
_MEMORY_FLAGS = ("batch_size", "per_host_train_bsz", "per_replica_batch", "batch_tokens",
                 "mem_len", "tgt_len", "seg_len")


def memory_fix(defined=None) -> str:
    """The fix of an out-of-memory error: lower the size flags this command has.

    Args:
      defined: the flag names of the command (default: those of `flags.FLAGS`).
    """
    defined = set(flags.FLAGS) if defined is None else set(defined)
    names = [f"--{n}" for n in _MEMORY_FLAGS if n in defined]
    lower = (f"lower {', '.join(names[:-1])} or {names[-1]}, or " if len(names) > 1
             else f"lower {names[0]}, or " if names else "")
    return f"{lower}use a machine with more memory"


def _raised_by_project(error: BaseException) -> bool:
    """Whether the innermost frame of `error`'s traceback is txl-tf's own code."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    path = os.path.abspath(frames[-1].filename)
    return path.startswith(_REPO + os.sep) and "site-packages" not in path


def _is_project_class(error: BaseException) -> bool:
    """Whether `error` is an instance of an error class of txl-tf (or of a subclass of one)."""
    return any(cls.__module__ == p or cls.__module__.startswith(p + ".")
               for cls in type(error).__mro__ for p in _PROJECT_PACKAGES)


def _path_in_traceback(error: BaseException):
    """The file being written when `error` was raised: a local path of the innermost frame that
    has one (`tmp`, `path`, ...), or None."""
    tb, found = error.__traceback__, None
    while tb is not None:
        for name in ("tmp", "path", "filename", "file_path", "fname", "prefix"):
            value = tb.tb_frame.f_locals.get(name)
            if isinstance(value, str) and value and os.path.isdir(
                    os.path.dirname(os.path.abspath(value))):
                found = value
                break
        tb = tb.tb_next
    return found


def _disk_full(error: BaseException):
    """(1, message) when `error` reports a full disk, else None."""
    if not is_disk_full(error):
        return None
    path = getattr(error, "filename", None) or _path_in_traceback(error)
    where = (f"the device holding {os.path.dirname(os.path.abspath(path))}" if path
             else "the output device")
    return RUNTIME_ERROR, (f"no space left on {where}; free space there or choose another "
                           "directory.")


def _os_error(error: OSError):
    """(exit code, message) of an OSError, or None for one that is not expected."""
    path = error.filename or "the output path"
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        what = "read-only" if error.errno == errno.EROFS else "not writable (permission denied)"
        return RUNTIME_ERROR, (f"{path} is {what}; choose a writable directory or fix its "
                               "permissions.")
    if error.errno == errno.ELOOP:
        return USAGE_ERROR, (f"{path} is a symbolic link loop (too many levels of symbolic "
                             "links); fix the link or give another path.")
    if isinstance(error, FileNotFoundError) and error.filename:
        return USAGE_ERROR, f"{error.filename} does not exist; check the path."
    if isinstance(error, (NotADirectoryError, FileExistsError)) and error.filename:
        return USAGE_ERROR, (f"{error.filename} (or a parent of it) is a file where a directory "
                             "is needed; choose a directory path.")
    if isinstance(error, IsADirectoryError) and error.filename:
        return USAGE_ERROR, f"{error.filename} is a directory where a file is needed."
    if error.errno is not None:
        return RUNTIME_ERROR, f"{error.strerror or error}: {path}."
    return None


def _tf_error(error: BaseException):
    """(exit code, message) of a tf.errors.OpError, or None."""
    tf = sys.modules.get("tensorflow")
    if tf is None or not isinstance(error, tf.errors.OpError):
        return None
    first = (error.message or str(error)).strip().splitlines()[0] if str(error) else ""
    first = first[:300]
    if isinstance(error, tf.errors.ResourceExhaustedError):
        shape = re.search(r"OOM when allocating tensor with shape\s*(\[[\d, ]*\])", str(error))
        what = f"a tensor of shape {shape.group(1)}" if shape else first
        return RUNTIME_ERROR, f"out of memory allocating {what}; {memory_fix()}."
    if isinstance(error, tf.errors.DataLossError):
        return RUNTIME_ERROR, (f"damaged file: {first}; restore it from a copy or make it "
                               "again.")
    if isinstance(error, tf.errors.PermissionDeniedError):
        return RUNTIME_ERROR, f"permission denied: {first}."
    if isinstance(error, tf.errors.NotFoundError):
        return USAGE_ERROR, f"not found: {first}; check the path."
    return None


def classify(error: BaseException):
    """(exit code, one-line message) of an expected failure, or None for a bug.

    Args:
      error: the exception that ended `main`.

    Returns:
      (1 or 2, message) or None.
    """
    if isinstance(error, (app.UsageError, flags.Error)):
        return USAGE_ERROR, str(error)
    if isinstance(error, MemoryError):
        detail = f": {error}" if str(error) else ""
        return RUNTIME_ERROR, f"out of memory{detail}; {memory_fix()}."
    if (isinstance(error, (ValueError, OSError, RuntimeError, ArithmeticError))
            and _is_project_class(error)):
        return getattr(error, "exit_code", USAGE_ERROR), str(error)  # txl-tf's own message
    full = _disk_full(error)
    if full is not None:
        return full
    tf_result = _tf_error(error)
    if tf_result is not None:
        return tf_result
    if isinstance(error, OSError):
        return _os_error(error)
    if type(error) is ValueError and _raised_by_project(error):
        return USAGE_ERROR, str(error)
    return None
