"""What kind a directory is (data, model, preset, export), and the one refusal of a command
that would write into a directory of another kind.

A directory's kind is recognised by its marker files, the strongest first:

  export  a version folder (digits) holding saved_model.pb, saved_model.pb itself, or the
          export's models.config (runners/export.py)
  preset  model.weights.h5 or preprocessor.json (save_to_preset)
  model   config.json, a TF checkpoint (the `checkpoint` state file, ckpt-N.index), a run's
          record (train_summary.json, import.json, flags.txt), or a corpus-info.json that names
          its data_dir (the copy training writes) (runners/train.py,
          runners/import_weights.py, txl_tf.save_model)
  data    corpus-info.json, record_info-*.json or *.tfrecords, and none of the above
          (runners/prepare_data.py); a model directory holds a copy of corpus-info.json and
          vocab.txt, which does not make it a data directory

An empty or missing directory has no kind. A command calls `check_kind` on each directory it
writes before it writes anything: `train.py --data_dir=<a model directory>` is refused instead
of rebuilding a corpus inside another run's directory.

Example:
  >>> kind_of("runs/default")
  'model'
  >>> check_kind("runs/default", DATA, "--data_dir")   # UntrustedFileError: a model directory
"""
import difflib
import os
import re
from typing import Optional

from untrusted_files import reading
from untrusted_files.errors import UntrustedFileError

DATA, MODEL, PRESET, EXPORT = "data", "model", "preset", "export"
KINDS = (EXPORT, PRESET, MODEL, DATA)  # the order they are recognised in

DESCRIPTIONS = {
    DATA: "a prepared data directory (runners/prepare_data.py)",
    MODEL: "a model directory (runners/train.py or runners/import_weights.py)",
    PRESET: "a preset directory (save_to_preset)",
    EXPORT: "an export directory (runners/export.py)",
}
_VERSION = re.compile(r"\d+")
_CHECKPOINT_INDEX = re.compile(r"ckpt-\d+\.index")
_EXPORT_FILES = ("saved_model.pb", "models.config", "batching_parameters.txt")
_PRESET_FILES = ("model.weights.h5", "preprocessor.json")
_MODEL_FILES = ("config.json", "checkpoint", "train_summary.json", "import.json", "flags.txt")
_DATA_FILES = ("corpus-info.json",)


def _marker(names, directory: str) -> Optional[tuple]:
    """(kind, the marker file that shows it) of a directory listing `names`, or None."""
    listed = set(names)
    for name in sorted(listed):
        if _VERSION.fullmatch(name) and os.path.isfile(
                os.path.join(directory, name, "saved_model.pb")):
            return EXPORT, os.path.join(name, "saved_model.pb")
    for kind, files in ((EXPORT, _EXPORT_FILES), (PRESET, _PRESET_FILES),
                        (MODEL, _MODEL_FILES)):
        for name in files:
            if name in listed:
                return kind, name
    for name in sorted(listed):
        if _CHECKPOINT_INDEX.fullmatch(name):
            return MODEL, name
    for name in _DATA_FILES:
        if name in listed:
            info = reading.read_json_or_none(os.path.join(directory, name))
            if isinstance(info, dict) and "data_dir" in info:  # the copy training writes
                return MODEL, f"{name} naming its data_dir"
            return DATA, name
    for name in sorted(listed):
        if (name.startswith("record_info-") and name.endswith(".json")) or name.endswith(
                ".tfrecords"):
            return DATA, name
    return None


def recognise(directory) -> Optional[tuple]:
    """(kind, marker file) of `directory`, or None when it is missing, empty, unreadable, not
    a directory, or holds none of the markers."""
    directory = os.fspath(directory)
    if "://" in directory or not os.path.isdir(directory):
        return None
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    return _marker(names, directory)


def kind_of(directory) -> Optional[str]:
    """`DATA`, `MODEL`, `PRESET`, `EXPORT`, or None (see the module docstring)."""
    found = recognise(directory)
    return found[0] if found else None


def check_kind(directory, kind: str, name: str, error=UntrustedFileError) -> None:
    """Raises `error` when the existing `directory` is of a kind other than `kind`: the
    command would write its files into (or read them from) another command's directory.

    Args:
      directory: the directory a command is about to write (missing or empty: accepted).
      kind: the kind the command makes.
      name: how the message names it (e.g. "--data_dir=runs/x").
      error: the exception class raised.
    """
    found = recognise(directory)
    if found is None or found[0] == kind:
        return
    other, marker = found
    raise error(f"{name} is {DESCRIPTIONS[other]} (it holds {marker}), not "
                f"{DESCRIPTIONS[kind]}; give {DESCRIPTIONS[kind].split(' (')[0]} or a new "
                "directory (a command writes only into directories of the kind it makes).")


def nearest_of_kind(path, kind: str) -> Optional[str]:
    """The directory of `kind` beside `path` whose name is nearest to it (difflib), or None."""
    path = os.path.normpath(os.fspath(path))
    parent = os.path.dirname(path)
    try:
        names = sorted(os.listdir(parent or "."))
    except OSError:
        return None
    names = [n for n in names if kind_of(os.path.join(parent, n)) == kind]
    close = difflib.get_close_matches(os.path.basename(path), names, n=1, cutoff=0.0)
    return os.path.join(parent, close[0]) if close else None
