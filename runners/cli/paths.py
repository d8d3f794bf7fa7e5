"""Checks of the path flags a runner is given, before any work: one usage error naming the flag."""
import os

from absl import app


def check_directories(**paths) -> None:
    """Raises `app.UsageError` for a path flag that names an existing file, not a directory.

    Args:
      **paths: flag name -> path (None or '' are skipped), e.g. model_dir=FLAGS.model_dir.
    """
    for name, path in paths.items():
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise app.UsageError(f"--{name}={path} is a file, not a directory; give a directory "
                                 "path.")


def check_files(**paths) -> None:
    """Raises `app.UsageError` for a path flag whose file does not exist.

    Args:
      **paths: flag name -> path (None or '' are skipped), e.g. raw_path=FLAGS.raw_path.
    """
    for name, path in paths.items():
        if path and not os.path.exists(path):
            raise app.UsageError(f"--{name}={path} does not exist; check the path.")
