"""Other libraries' error messages as our one-line errors: `one_line` (the message whole, as one
line), `first_line` (its first line, shortened) and `is_disk_full` (whether it reports a full
disk, by errno or by the words TensorFlow and NumPy use).

Keras and TensorFlow messages span lines ("... Example error message for object <...>:", a blank
line, then the cause); their first line alone can end before the cause. The lines are joined
instead, and only a message too long for one line is shortened, at its end.
"""
import errno
import re

# The first lines of a message that holds a traceback (tf.function's errors raised in tracing).
_TRACEBACK_HEADS = ("in user code:", "Traceback (most recent call last):")
# TensorFlow's error from running a graph: this head, where each op was defined, then the cause.
_GRAPH_HEAD = "Graph execution error:"
_GRAPH_NOISE = re.compile(r"Detected at node |File |\[\[|\d+ root error\(s\) found")
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
    characters; the error's class name when the message is empty. A message that is a
    traceback (an error raised while `tf.function` traced: "in user code:", the frames, then
    "ValueError: the cause") gives its last line, the cause; TensorFlow's "Graph execution
    error:" gives its first line after where the ops were defined, the cause.

    Example:
      >>> first_line(ValueError('in user code:\\n\\n  File "m.py", line 4\\n\\n  ValueError: bad'))
      'ValueError: bad'
    """
    lines = [line.strip() for line in
             (getattr(error, "message", None) or str(error)).strip().splitlines() if line.strip()]
    text = type(error).__name__
    if lines and lines[0] in _TRACEBACK_HEADS:
        text = lines[-1]
    elif lines and lines[0] == _GRAPH_HEAD:
        causes = [line for line in lines[1:] if not _GRAPH_NOISE.match(line)]
        text = causes[0] if causes else lines[0]
    elif lines:
        text = lines[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` reports a full disk: errno ENOSPC, or a message that says so."""
    return (getattr(error, "errno", None) == errno.ENOSPC
            or bool(_DISK_FULL.search(getattr(error, "message", None) or str(error))))
