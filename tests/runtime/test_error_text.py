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


def test_a_tensorflow_error_gives_its_cause_not_its_head(tmp_path, monkeypatch):
    import tensorflow as tf
    (tmp_path / "traced.py").write_text(
        "import tensorflow as tf\n\n"
        "@tf.function\ndef step(x):\n    raise ValueError('the cause, on its own line')\n\n"
        "@tf.function\ndef gather(x):\n    return tf.gather(x, 7)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import traced
    try:
        traced.step(tf.constant(1))
    except ValueError as error:
        assert str(error).startswith("in user code:")  # TensorFlow's wrapping, as on a GPU
        assert first_line(error) == "ValueError: the cause, on its own line"
    else:
        raise AssertionError("tracing did not raise")
    try:
        traced.gather(tf.constant([1, 2]))
    except tf.errors.InvalidArgumentError as error:
        assert error.message.startswith("Graph execution error:")
        assert first_line(error).startswith("indices = 7 is not in [0, 2)")
    else:
        raise AssertionError("the gather did not fail")
    assert first_line(_OpLike("Traceback (most recent call last):\n  File x\nKeyError: 'k'")) \
        == "KeyError: 'k'"


def test_one_line_joins_the_lines():
    assert one_line("could not load <X>:\n\nshape (2,) != (3,)\n") == \
        "could not load <X>: shape (2,) != (3,)"


def test_disk_full_by_errno_or_by_the_words_tensorflow_and_numpy_use():
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(_OpLike("...; No space left on device"))
    assert is_disk_full(OSError("4096 requested and 0 written"))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(ValueError("no space here"))
