"""Probes of TF checkpoint files: which ones a directory holds, whether one reads whole, and the
one-line description of a failed read.

A damaged checkpoint (a missing or garbage .index, a truncated .data file, a checksum mismatch)
is told apart from one that does not fit the model (a shape mismatch) by `is_damage_error`;
`checkpoint_problem` reads every tensor of a checkpoint without assigning any variable, so a
reader can choose a readable checkpoint before it restores one.

Example:
  >>> checkpoint_files("runs/book")
  {60: ["ckpt-60.data-00000-of-00001", "ckpt-60.index"]}
  >>> checkpoint_problem("runs/book/ckpt-60") is None
  True
"""
import contextlib
import glob
import logging
import os
import re
from typing import Dict, List, Optional

import tensorflow as tf

from txl_tf.runtime.error_text import first_line
from txl_tf.storage.model_dir_layout import CHECKPOINT_NAME
from untrusted_files import reading

# Errors of reading a damaged checkpoint: a missing/garbage .index (NotFoundError, DataLossError
# "not an sstable"), a truncated .data file (IndexError "Read less bytes than requested"), a
# checksum mismatch (DataLossError). InvalidArgumentError is a shape mismatch, not damage.
DAMAGE_ERRORS = (tf.errors.NotFoundError, tf.errors.DataLossError, tf.errors.OutOfRangeError,
                 tf.errors.UnknownError, IndexError, OSError)


def is_damage_error(error: BaseException) -> bool:
    """Whether `error`, raised while reading a checkpoint, means its files are damaged."""
    if isinstance(error, tf.errors.InvalidArgumentError):
        return False
    return isinstance(error, DAMAGE_ERRORS) or type(error) is tf.errors.OpError


@contextlib.contextmanager
def quiet_tf_warnings():
    """TensorFlow's own Python warnings off inside the block (e.g. the "Value in checkpoint
    could not be found" lines of a failed restore, or a state file it cannot parse, which the
    caller reports in one line of its own)."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


_CHECKPOINT_FILE = re.compile(r"^(?P<name>.+)-(?P<number>\d+)\.(index|data-\d+-of-\d+)$")


def file_problem(checkpoint_path: str) -> Optional[str]:
    """Why a file of the checkpoint `checkpoint_path` (its .index and .data-*) may not be
    given to TensorFlow: not a regular file inside its directory (a link out, a named pipe,
    which TensorFlow's reader would block on), or a link to nothing; None when each is."""
    if "://" in checkpoint_path:
        return None
    directory = os.path.dirname(os.path.abspath(checkpoint_path))
    for path in sorted(glob.glob(glob.escape(checkpoint_path) + ".*")):
        try:
            os.close(reading.open_checked(path, inside=directory, max_bytes=2**63 - 1))
        except reading.UntrustedFileError as error:
            return str(error).rstrip(".")
        except OSError as error:
            return f"{path} cannot be opened ({error.strerror})"
    return None


def checkpoint_problem(checkpoint_path: str) -> Optional[str]:
    """Why the checkpoint `checkpoint_path` (a prefix) cannot be read, or None when every tensor
    of it reads back with its checksum. Reads one tensor at a time; changes no variable."""
    if not tf.io.gfile.exists(checkpoint_path + ".index"):
        return f"{os.path.basename(checkpoint_path)}.index is missing"
    problem = file_problem(checkpoint_path)
    if problem:
        return problem
    try:
        reader = tf.train.load_checkpoint(checkpoint_path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except Exception as error:  # noqa: BLE001 - classified just below
        if not is_damage_error(error):
            raise
        return f"its files cannot be read ({first_line(error, 160)})"
    return None


def checkpoint_files(directory: str, name: str = CHECKPOINT_NAME) -> Dict[int, List[str]]:
    """The checkpoint files of `directory` by checkpoint number, found by listing it (the
    `checkpoint` state file is not needed): {60: ["ckpt-60.data-00000-of-00001",
    "ckpt-60.index"], ...}."""
    found = {}
    if not os.path.isdir(directory):
        return found
    for entry in sorted(os.listdir(directory)):
        match = _CHECKPOINT_FILE.match(entry)
        if match and match.group("name") == name:
            found.setdefault(int(match.group("number")), []).append(entry)
    return found
