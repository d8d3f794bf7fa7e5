"""Checks of the path flags a runner is given, before any work: one usage error naming the flag
(and, for --data_dir, the nearest prepared directory)."""
import errno
import os
from typing import Optional

from absl import app

from tf_records.corpora import CORPORA
from tf_records.data_dir_layout import CORPUS_INFO_FILE as DATA_CORPUS_INFO
from txl_tf.storage import model_dir_layout
from txl_tf.storage.text_files import regular_file_problem
from untrusted_files import dir_kinds, reading, schema


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


# The kind of directory each directory flag names (untrusted_files/dir_kinds.py): a runner
# reads and writes only directories of that kind.
FLAG_KINDS = {"data_dir": dir_kinds.DATA, "model_dir": dir_kinds.MODEL,
              "export_dir": dir_kinds.EXPORT, "preset_dir": dir_kinds.PRESET}


def check_directories(**paths) -> None:
    """Raises `app.UsageError` for a path flag that names an existing file, not a directory,
    a symbolic link loop or a link to nothing, or a directory of another kind than its flag's
    (`FLAG_KINDS`: `--data_dir=<a model directory>` would rebuild a corpus inside another
    run's directory).

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
        if path and name in FLAG_KINDS:
            dir_kinds.check_kind(path, FLAG_KINDS[name], f"--{name}={path}", app.UsageError)


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


def _recorded_data_dir(model_dir: Optional[str]) -> Optional[str]:
    """The data directory the run in `model_dir` was trained on (its corpus-info.json), or
    None for a new run."""
    if not model_dir:
        return None
    info = reading.read_json_or_none(
        model_dir_layout.path(model_dir, model_dir_layout.CORPUS_INFO_FILE),
        schema=schema.INFO_FIELDS_SCHEMA)
    return None if info is None else info.get("data_dir")


def _same_path(a: str, b: str) -> bool:
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def check_data_dir(data_dir: str, dataset_given: bool, default: str,
                   model_dir: Optional[str] = None) -> None:
    """Raises `app.UsageError`, before anything is written, for a `--data_dir` that is not
    prepared (no corpus-info.json) when preparing it there would be a mistake:

    * it is not the default directory and no `--dataset` says which corpus to make there (a
      mistyped path would otherwise silently become a new corpus of the default dataset);
      the line names the nearest prepared directory beside it;
    * `model_dir` holds a run trained on another data directory (a new corpus would be
      built, then refused for its vocabulary).

    Args:
      data_dir: the --data_dir given.
      dataset_given: whether --dataset was given (on the command line or in a flagfile).
      default: the default --data_dir (`DataOptions.data_dir`).
      model_dir: the run's --model_dir, if the command trains one.
    """
    if not data_dir or "://" in data_dir:
        return
    dir_kinds.check_kind(data_dir, dir_kinds.DATA, f"--data_dir={data_dir}", app.UsageError)
    if os.path.isfile(os.path.join(data_dir, DATA_CORPUS_INFO)):
        return
    recorded = _recorded_data_dir(model_dir)
    if recorded and not _same_path(recorded, data_dir):
        raise app.UsageError(
            f"--data_dir={data_dir} is not prepared, and the run in --model_dir={model_dir} "
            f"was trained on the data in {recorded}; give --data_dir={recorded}, or a new "
            "--model_dir for new data.")
    if dataset_given or _same_path(data_dir, default):
        return
    nearest = dir_kinds.nearest_of_kind(data_dir, dir_kinds.DATA)
    where = (f"did you mean --data_dir={nearest}?" if nearest
             else "no prepared data directory is beside it.")
    raise app.UsageError(
        f"--data_dir={data_dir} is not a prepared data directory ({DATA_CORPUS_INFO} not found); "
        f"{where} To make a new corpus there, say which: --dataset=NAME ({', '.join(CORPORA)}).")


def check_model_dirs(**paths) -> None:
    """Raises `app.UsageError` for a model directory flag whose config.json is missing, before
    TensorFlow loads (the same line `txl_tf.load_config` gives, at once).

    Args:
      **paths: flag name -> a path or a list of paths (None or '' are skipped; paths with a
        scheme, gs://..., are left to TensorFlow's file system).
    """
    for name, value in paths.items():
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if not path or "://" in str(path):
                continue
            if os.path.exists(path) and not os.path.isdir(path):
                continue  # check_directories says it is a file
            if not os.path.isfile(model_dir_layout.config_path(path)):
                raise app.UsageError(model_dir_layout.missing_config_message(path))
