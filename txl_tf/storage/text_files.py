"""`read_text_file`: a text file a user names, read whole but bounded, as one clear error.

A path may name a named pipe or a device (`/dev/zero`) that never ends, a huge file, or bytes
that are not UTF-8: each is refused in one line naming the path, before or instead of reading
without bound. TensorFlow-free.
"""
import os
import stat

MAX_TEXT_BYTES = 64 * 2**20  # prompts, flag files, config files: far below this


def regular_file_problem(path: str):
    """Why `path` is not a regular file to read (a pipe, a device, a socket), or None (also for
    a directory or a path that does not exist: the caller reports those)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    for test, kind in kinds:
        if test(mode):
            return f"is {kind}, not a regular file"
    return None


def read_text_file(path: str, name: str, error=ValueError,
                   max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the regular file `path`, at most `max_bytes` bytes.

    Args:
      path: the file.
      name: how messages name it (e.g. "--prompt_file=p.txt" or "runs/x/config.json").
      error: the exception class raised for a file that cannot be read as such text.
      max_bytes: the largest file read.

    Returns:
      The text.

    Raises:
      `error`: not a regular file, larger than `max_bytes`, or not UTF-8 (the first bad byte
        and its offset named). OSError: the file cannot be opened (missing, permissions).
    """
    problem = regular_file_problem(path)
    if problem:
        raise error(f"{name} {problem}; give a file.")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise error(f"{name} is larger than {max_bytes // 2**20} MiB, too large for this "
                    "input; give a smaller file.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        raise error(f"{name} is not UTF-8 text (byte {bad.object[bad.start]:#04x} at offset "
                    f"{bad.start}); save it as UTF-8.") from None


def check_utf8_path(path, name: str, error=ValueError) -> str:
    """`path` as a str when it can be written as UTF-8, else `error` (TensorFlow's file
    functions and JSON need UTF-8; a path decoded from other bytes holds lone surrogates).

    Args:
      path: a str or os.PathLike.
      name: how the message names it (e.g. "export_dir").
      error: the exception class raised (also for a value that is no path, such as None).
    """
    try:
        text = os.fspath(path)
    except TypeError:
        raise error(f"{name} must be a path (a str or os.PathLike), got "
                    f"{type(path).__name__}.") from None
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as bad:
            shown = os.fsencode(text).decode("utf-8", "backslashreplace")
            raise error(f"{name}={shown} is not UTF-8 (at character {bad.start}); give a UTF-8 "
                        "path.") from None
    return text
