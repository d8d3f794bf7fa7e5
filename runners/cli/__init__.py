"""Start-up and errors shared by every runner: a quiet console and one error line.

Every runner calls `quiet_start()` before it imports TensorFlow and hands its `main` to `run`:

    from runners import cli
    cli.quiet_start()
    ...
    if __name__ == "__main__":
        cli.run(main)

Console: `quiet_start` sets `TF_CPP_MIN_LOG_LEVEL=2` unless the user set it, and drops the lines
TensorFlow's C++ libraries print while they load, whatever that variable says (`=0` shows
them all: it is how a user asks for TensorFlow's own start-up log) ("All log
messages before absl::InitializeLog()", oneDNN, "Could not find cuda drivers", the `cuInit`
error of a machine without GPU); every other line printed meanwhile is passed on. Measured with
TensorFlow 2.21 on a CPU machine: the oneDNN and cuda-driver lines (printed twice, as two
libraries load) come whatever the level; level 1 removes the cpu_feature_guard line, level 3
also the `cuInit` error (2 is kept so that C++ errors explaining a failure still show). absl's
INFO lines are off unless `--verbosity` is given (`--verbosity=0` shows them).

Errors: an expected failure is one line on stderr, `error: <problem>; <fix>`, and an exit code:
  0  success.
  1  runtime failure: no space left on a device, a read-only or not writable path, out of
     memory, a file found damaged during the work (`tf.errors.DataLossError`).
  2  usage error: a bad flag value, a missing or invalid path given by the user, a foreign or
     corrupt input file: the error classes of txl-tf (`ConfigError`, `ModelDirError`,
     `DataError`, `TrainError`, `StrategyError`, `WeightImportError`, ...) and the
     `ValueError`s txl-tf's own code raises to reject an input. An error class of txl-tf
     that reports a failure during the work instead sets the class attribute `exit_code = 1`.
 130 interrupted (Ctrl-C).
`--verbosity=1` prints the traceback above the line. Any other exception is a bug and keeps its
traceback.
"""
import errno
import os
import re
import sys
import tempfile
import traceback

# Lines TensorFlow's C++ libraries print while they load (before TF_CPP_MIN_LOG_LEVEL applies).
_START_UP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|^[IWE]\d{4} [\d:. ]+\d+ (port|cudart_stub|cuda_platform|cpu_feature_guard|cuda_fft|"
    r"cuda_dnn|cuda_blas|cuda_executor|gpu_device)\.cc:\d+\]"
    r"|^To enable the following instructions: .* rebuild TensorFlow")

# Exit codes.
OK, RUNTIME_ERROR, USAGE_ERROR, INTERRUPTED = 0, 1, 2, 130

# The project's own packages: a ValueError raised by their code rejects an input.
_PROJECT_PACKAGES = ("runners", "txl_tf", "tf_records", "__main__")
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_MEMORY_FIX = ("lower --batch_size / --per_host_train_bsz, --mem_len or --tgt_len, or use a "
               "machine with more memory")


def quiet_start() -> None:
    """Imports TensorFlow without its C++ start-up lines (see the module docstring).

    Does nothing when the user set `TF_CPP_MIN_LOG_LEVEL=0` (then every line is shown) or when
    TensorFlow is already imported.
    """
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0" or "tensorflow" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        failed = True
        try:
            import tensorflow as tf
            tf.config.list_physical_devices("GPU")  # the cuInit line comes here
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode("utf-8", "replace").splitlines()
            kept = lines if failed else [ln for ln in lines if not _START_UP_NOISE.search(ln)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
                sys.stderr.flush()


def check_directories(**paths) -> None:
    """Raises `app.UsageError` for a path flag that names an existing file, not a directory.

    Args:
      **paths: flag name -> path (None or '' are skipped), e.g. model_dir=FLAGS.model_dir.
    """
    from absl import app
    for name, path in paths.items():
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise app.UsageError(f"--{name}={path} is a file, not a directory; give a directory "
                                 "path.")


def check_files(**paths) -> None:
    """Raises `app.UsageError` for a path flag whose file does not exist.

    Args:
      **paths: flag name -> path (None or '' are skipped), e.g. raw_path=FLAGS.raw_path.
    """
    from absl import app
    for name, path in paths.items():
        if path and not os.path.exists(path):
            raise app.UsageError(f"--{name}={path} does not exist; check the path.")


def _parse_flags(argv):
    """absl's flag parsing, with a bad flag as one line and exit code 2."""
    from absl import flags
    try:
        return flags.FLAGS(argv)
    except flags.Error as error:
        print(f"error: {str(error).rstrip('.')}; see --helpshort for the flags.",
              file=sys.stderr)
        sys.exit(USAGE_ERROR)


def _verbosity():
    """--verbosity when the user gave it, else None."""
    from absl import flags
    flag = flags.FLAGS["verbosity"]
    return flag.value if flag.present else None


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


# A short write (NumPy's tofile, TensorFlow's file writers) or a message of ENOSPC.
_DISK_FULL = re.compile(r"No space left on device|\d+ requested and \d+ written", re.I)


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
    if getattr(error, "errno", None) != errno.ENOSPC and not _DISK_FULL.search(str(error)):
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
        return RUNTIME_ERROR, f"out of memory allocating {what}; {_MEMORY_FIX}."
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
    from absl import app, flags
    if isinstance(error, (app.UsageError, flags.Error)):
        return USAGE_ERROR, str(error)
    if isinstance(error, MemoryError):
        detail = f": {error}" if str(error) else ""
        return RUNTIME_ERROR, f"out of memory{detail}; {_MEMORY_FIX}."
    if isinstance(error, (ValueError, OSError, RuntimeError)) and _is_project_class(error):
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


def _main_with_one_error_line(main):
    def wrapped(argv):
        from absl import logging
        verbosity = _verbosity()
        if verbosity is None:
            logging.set_verbosity(logging.WARNING)
        try:
            return main(argv)
        except KeyboardInterrupt:
            print("error: interrupted.", file=sys.stderr)
            sys.exit(INTERRUPTED)
        except Exception as error:  # noqa: BLE001 (sorted into expected failures and bugs)
            result = classify(error)
            if result is None:
                raise
            if verbosity is not None and verbosity >= 1:
                traceback.print_exc()
            code, message = result
            message = " ".join(str(message).split()) or type(error).__name__
            print(f"error: {message}", file=sys.stderr, flush=True)
            sys.exit(code)
    return wrapped


def run(main) -> None:
    """`absl.app.run(main)` with bad flags and expected failures as one line (see above)."""
    from absl import app
    app.run(_main_with_one_error_line(main), flags_parser=_parse_flags)
