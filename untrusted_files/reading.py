"""Reading a file that came from elsewhere: the one opener, its size bounds and JSON.

Every file is opened the same way (`open_checked`):

1. its path is resolved; with `inside=DIR` the resolved path must lie inside DIR's resolved
   path (a `vocab.txt` that is a link to `/etc/passwd` is refused, not read);
2. the resolved path is stat'ed: a named pipe, a device, a socket or a directory is refused
   before it is opened (opening a device may have effects of its own);
3. it is opened with O_NOFOLLOW | O_NONBLOCK (a link swapped in after step 1 fails; a pipe
   swapped in does not block), and the descriptor is `fstat`ed: the same file as step 2, a
   regular file, at most its kind's `max_bytes` (an 8 GB sparse file is refused before one byte
   is read); on Linux the descriptor's own path is checked against DIR again;
4. at most `max_bytes` bytes are read from that descriptor.

`read_text` adds UTF-8; `read_json` adds a nesting bound (checked on the text before parsing:
a list nested 100,000 deep is one line, not a RecursionError) and, optionally, a `schema`
(`untrusted_files.schema`). `copy_file` copies through the same descriptor.

Size bounds per kind of file are the `MAX_*` constants below; callers name theirs.
"""
import errno
import json
import os
import re
import stat
from typing import Optional

from untrusted_files.errors import UntrustedFileError

__all__ = ["UntrustedFileError", "open_checked", "read_bytes", "read_text", "read_json",
           "read_json_or_none", "parse_json", "decode_utf8", "copy_file", "is_inside",
           "not_regular", "nesting_depth"]

MiB = 2**20
MAX_CONFIG_BYTES = 1 * MiB        # config.json: about 1 KB
MAX_FLAGFILE_BYTES = 1 * MiB      # a *.flags file: a few KB
MAX_JSON_BYTES = 16 * MiB         # corpus-info.json, run records, preset and export JSON files
MAX_RECORD_INFO_BYTES = 64 * MiB  # record_info-*.json: per-file sizes and hashes, per host
MAX_VOCAB_BYTES = 256 * MiB       # vocab.txt: lm1b's 793,470 words are about 7 MB
MAX_TEXT_BYTES = 64 * MiB         # prompts and other text a user names
MAX_WEIGHTS_BYTES = 16 * 2**30    # released weights to import: lm1b-large's are about 3.3 GB
MAX_JSON_DEPTH = 32               # the deepest file written here nests 4 levels

_O_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_CLOEXEC", 0))
_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"))
# A JSON string (escapes included), removed before counting brackets.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def _size_text(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def not_regular(mode: int) -> Optional[str]:
    """What a file of `mode` is when it is not a regular file ("a named pipe (FIFO)", ...), or
    None for a regular file."""
    for test, kind in _NOT_REGULAR:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def is_inside(path: str, directory: str) -> bool:
    """Whether the resolved `path` lies inside the resolved `directory` (or is it)."""
    real, root = os.path.realpath(path), os.path.realpath(directory)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _outside(name: str, real: str, inside: str, error):
    return error(f"{name} leads outside {inside} (to {real}); a directory from elsewhere may "
                 "not make this program read files outside it: replace the link with the "
                 "file itself.")


def open_checked(path, *, inside=None, max_bytes: int, error=UntrustedFileError,
                 name: Optional[str] = None) -> int:
    """A read-only descriptor of the regular file `path`, checked as the module says.

    Args:
      path: the file.
      inside: the directory it must lie in (after resolving links), or None (a file a user
        names directly: links are followed).
      max_bytes: the largest size accepted.
      error: the exception class raised (a ValueError subclass of the caller's).
      name: how messages name the file (default: `path`).

    Returns:
      An open file descriptor (the caller closes it).

    Raises:
      `error`: a link outside `inside`, not a regular file, or larger than `max_bytes`.
      FileNotFoundError (an OSError): `path` does not exist; PermissionError likewise.
    """
    path = os.fspath(path)
    name = name or path
    real = os.path.realpath(path)
    if inside is not None and not is_inside(real, inside):
        raise _outside(name, real, os.fspath(inside), error)
    before = os.stat(real)  # FileNotFoundError for a missing file or a link to nothing
    kind = not_regular(before.st_mode)
    if kind:
        raise error(f"{name} is {kind}, not a regular file; give a file.")
    try:
        fd = os.open(real, _O_FLAGS)
    except OSError as failure:
        if failure.errno == errno.ELOOP:
            raise error(f"{name} was replaced by a link while it was opened; give a regular "
                        "file.") from None
        raise
    try:
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not_regular(
                after.st_mode):
            raise error(f"{name} was replaced while it was opened; give a regular file.")
        if inside is not None and os.path.isdir("/proc/self/fd"):
            opened = os.readlink(f"/proc/self/fd/{fd}")
            if not is_inside(opened, inside):
                raise _outside(name, opened, os.fspath(inside), error)
        if after.st_size > max_bytes:
            raise error(f"{name} is larger than the {_size_text(max_bytes)} such a file may be "
                        f"({_size_text(after.st_size)}); it is not this program's file (or is "
                        "damaged): give the right file.")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path, *, inside=None, max_bytes: int, error=UntrustedFileError,
               name: Optional[str] = None) -> bytes:
    """The bytes of `path`, opened by `open_checked` (same arguments), at most `max_bytes`
    (a file that grows while read is refused, not read further)."""
    name = name or os.fspath(path)
    fd = open_checked(path, inside=inside, max_bytes=max_bytes, error=error, name=name)
    try:
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(MiB * 4, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise error(f"{name} grew past {_size_text(max_bytes)} while it was read; give "
                            "a file that is not being written.")
    finally:
        os.close(fd)
    return b"".join(chunks)


def decode_utf8(data: bytes, name: str, error=UntrustedFileError) -> str:
    """`data` as UTF-8 text, or `error` naming the first bad byte and its offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        raise error(f"{name} is not UTF-8 text (byte {bad.object[bad.start]:#04x} at offset "
                    f"{bad.start}); save it as UTF-8.") from None


def read_text(path, *, inside=None, max_bytes: int = MAX_TEXT_BYTES,
              error=UntrustedFileError, name: Optional[str] = None) -> str:
    """The UTF-8 text of `path` (`read_bytes`'s checks, then UTF-8)."""
    name = name or os.fspath(path)
    return decode_utf8(read_bytes(path, inside=inside, max_bytes=max_bytes, error=error,
                                  name=name), name, error)


def nesting_depth(text: str) -> int:
    """The deepest nesting of JSON lists and objects in `text` (brackets in strings are not
    counted); linear in the text, no recursion."""
    if text.count("[") + text.count("{") == 0:
        return 0
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json(text: str, name: str, error=UntrustedFileError, fix: str = "give the right file",
               max_depth: int = MAX_JSON_DEPTH):
    """The JSON value of `text` (strict: no NaN or Infinity), its nesting at most `max_depth`.

    Raises:
      `error`: not JSON, nested deeper than `max_depth`, or holding NaN/Infinity.
    """
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text) > max_depth:
        raise error(f"{name} nests lists or objects more than {max_depth} deep, which no file "
                    f"of this program does; {fix}.")

    def no_constant(word):
        raise ValueError(f"{word} is not a JSON number")

    try:
        return json.loads(text, parse_constant=no_constant)
    except RecursionError:  # unreachable after the depth check; kept as one line
        raise error(f"{name} nests too deeply; {fix}.") from None
    except ValueError as bad:
        shown = str(bad).splitlines()[0][:200] if str(bad) else type(bad).__name__
        raise error(f"{name} is not valid JSON ({shown}); {fix}.") from None


def read_json(path, *, inside=None, max_bytes: int = MAX_JSON_BYTES, error=UntrustedFileError,
              name: Optional[str] = None, fix: str = "give the right file", schema=None,
              max_depth: int = MAX_JSON_DEPTH):
    """The JSON value of `path`: `read_text`'s checks, then `parse_json`, then `schema`.

    Args:
      path, inside, max_bytes, error, name: as `open_checked`.
      fix: what the message tells the user to do about a bad file.
      schema: an `untrusted_files.schema` spec the value must satisfy, or None.
      max_depth: the deepest nesting accepted.

    Returns:
      The value.

    Raises:
      `error`: any check failed (one line naming the file, the problem and `fix`).
      FileNotFoundError: `path` does not exist.
    """
    name = name or os.fspath(path)
    text = read_text(path, inside=inside, max_bytes=max_bytes, error=error, name=name)
    if text.startswith("\ufeff"):
        raise error(f"{name} starts with a byte order mark (U+FEFF), which JSON does not "
                    "allow; save it as UTF-8 without one.")
    value = parse_json(text, name, error, fix, max_depth)
    if schema is not None:
        from untrusted_files.schema import check  # pylint: disable=import-outside-toplevel
        check(value, schema, name, error, fix)
    return value


def copy_file(source, destination, *, inside=None, max_bytes: int,
              error=UntrustedFileError, name: Optional[str] = None) -> None:
    """Copies the regular file `source` (checked by `open_checked`) to the new file
    `destination` (created, never followed: a temporary name of an atomic write)."""
    data = read_bytes(source, inside=inside, max_bytes=max_bytes, error=error, name=name)
    fd = os.open(os.fspath(destination),
                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o666)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def read_json_or_none(path, *, inside=None, max_bytes: int = MAX_JSON_BYTES, schema=None):
    """`read_json`'s value, or None when the file is missing, unreadable or refused: for a
    record that is optional (a run's schedule, the best checkpoint's step)."""
    try:
        return read_json(path, inside=inside if inside is not None
                         else os.path.dirname(os.path.abspath(os.fspath(path))),
                         max_bytes=max_bytes, schema=schema)
    except (OSError, UntrustedFileError):
        return None
