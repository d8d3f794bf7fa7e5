"""The errors of training checkpoints, and the one-line message of a failed save."""
import errno
import os
from typing import Optional

import tensorflow as tf

from txl_tf.runtime.error_text import first_line


class CheckpointError(ValueError):
    """A checkpoint that does not fit the run."""


class CheckpointIOError(OSError):
    """A checkpoint that cannot be read or written: every checkpoint of model_dir damaged, or a
    save that failed (disk full, read-only file system...). A runtime failure (exit code 1);
    `str()` is the one-line message, `errno`/`filename` those of the cause when known."""
    exit_code = 1

    def __init__(self, message: str, code: Optional[int] = None,
                 filename: Optional[str] = None):
        super().__init__(code, message, filename)
        self.message = message

    def __str__(self):
        return self.message


def save_error(error: BaseException, what: str, directory: str,
               previous: Optional[str]) -> CheckpointIOError:
    """The one-line `CheckpointIOError` of a failed save of `what` into `directory`."""
    text = str(error)
    code = getattr(error, "errno", None)
    if code is None and isinstance(error, tf.errors.OpError):
        code = next((c for c, s in ((errno.ENOSPC, "No space left on device"),
                                    (errno.EROFS, "Read-only file system"),
                                    (errno.EACCES, "Permission denied")) if s in text), None)
        if code is None and isinstance(error, tf.errors.PermissionDeniedError):
            code = errno.EACCES
    kept = (f"the previous checkpoint {previous} is intact" if previous
            else "no earlier checkpoint exists")
    if code == errno.ENOSPC:
        head = f"no space left on {directory}: {what} could not be written"
        fix = ("free space (or keep fewer checkpoints: --keep_checkpoints, "
               "--nocheckpoint_memory) and run the same command again to resume")
    else:
        reason = os.strerror(code) if code else first_line(error)
        head = f"{what} could not be written into {directory} ({reason})"
        fix = "fix the directory and run the same command again to resume"
    return CheckpointIOError(f"{head}; {kept}; {fix}.", code, directory)
