"""`txl_tf/runtime/error_text.py`: the one place that shortens other libraries' errors and tells
a full disk; an empty message or a TensorFlow error's `message` must not break an error handler."""
import errno

from txl_tf.runtime.error_text import first_line, is_disk_full, one_line


class _OpLike(Exception):
    """An error with a `message` attribute, as TensorFlow's OpError has."""

    def __init__(self, message):
        super().__init__("wrapped: " + message)
        self.message = message


def test_first_line_is_the_first_line_shortened_or_the_class_name():
    assert first_line(ValueError("bad value\nsecond line")) == "bad value"
    assert first_line(OSError()) == "OSError"  # an empty message: no IndexError
    assert first_line(_OpLike("the op's own text\ndetails")) == "the op's own text"
    assert first_line(ValueError("x" * 500), 20) == "x" * 17 + "..."


def test_one_line_joins_the_lines():
    assert one_line("could not load <X>:\n\nshape (2,) != (3,)\n") == \
        "could not load <X>: shape (2,) != (3,)"


def test_disk_full_by_errno_or_by_the_words_tensorflow_and_numpy_use():
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(_OpLike("...; No space left on device"))
    assert is_disk_full(OSError("4096 requested and 0 written"))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(ValueError("no space here"))
