"""Other libraries' error messages as our one-line errors: `one_line` (the message whole, as one
line), `first_line` (its first line, shortened) and `is_disk_full` (whether it reports a full
disk, by errno or by the words TensorFlow and NumPy use).

Keras and TensorFlow messages span lines ("... Example error message for object <...>:", a blank
line, then the cause); their first line alone can end before the cause. The lines are joined
instead, and only a message too long for one line is shortened, at its end.
"""
import errno
import re

# ENOSPC's message, or a short write (NumPy's tofile, TensorFlow's file writers).
_DISK_FULL = re.compile(r"No space left on device|\d+ requested and \d+ written", re.I)


def one_line(message, limit: int = 400) -> str:
    """`message` (any object; its str) with its lines joined by spaces, at most `limit` chars.

    Example:
      >>> one_line("could not load object <X>:\\n\\nshape (2,) != (3,)\\n")
      'could not load object <X>: shape (2,) != (3,)'
    """
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def first_line(error: BaseException, limit: int = 240) -> str:
    """The first line of an error's message (a TensorFlow error's `message`), at most `limit`
    characters; the error's class name when the message is empty."""
    lines = (getattr(error, "message", None) or str(error)).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` reports a full disk: errno ENOSPC, or a message that says so."""
    return (getattr(error, "errno", None) == errno.ENOSPC
            or bool(_DISK_FULL.search(getattr(error, "message", None) or str(error))))
