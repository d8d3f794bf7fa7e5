"""Checks of the path flags a runner is given, before any work: one usage error naming the flag."""
import errno
import os

from absl import app

from txl_tf.text_files import regular_file_problem


def _check_links(name: str, path) -> None:
    """A usage error for a path that is (or passes through) a symbolic link loop, or a link to
    nothing."""
    if not path or "://" in str(path):
        return
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise app.UsageError(f"--{name}={path} is a symbolic link loop (a link that leads "
                                 "back to itself); fix the link or give another path.") from None
        if os.path.islink(path):
            raise app.UsageError(f"--{name}={path} is a symbolic link to {os.readlink(path)}, "
                                 "which does not exist; fix the link or give another path.") \
                from None


def check_directories(**paths) -> None:
    """Raises `app.UsageError` for a path flag that names an existing file, not a directory,
    or a symbolic link loop or a link to nothing.

    Args:
      **paths: flag name -> path (None or '' are skipped), e.g. model_dir=FLAGS.model_dir.
    """
    for name, path in paths.items():
        _check_links(name, path)
        if path and os.path.exists(path) and not os.path.isdir(path):
            problem = regular_file_problem(path)
            what = problem.split(", not")[0] if problem else "is a file"
            raise app.UsageError(f"--{name}={path} {what}, not a directory; give a directory "
                                 "path.")


def check_files(**paths) -> None:
    """Raises `app.UsageError` for a path flag whose file does not exist, or that names a named
    pipe, a device or a socket (whose reads may block or never end) instead of a regular file
    or directory.

    Args:
      **paths: flag name -> path (None or '' are skipped), e.g. raw_path=FLAGS.raw_path.
    """
    for name, path in paths.items():
        if path and not os.path.exists(path):
            raise app.UsageError(f"--{name}={path} does not exist; check the path.")
        problem = regular_file_problem(path) if path else None
        if problem:
            raise app.UsageError(f"--{name}={path} {problem}; give a file.")
