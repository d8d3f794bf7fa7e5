"""`check_flagfiles(argv)`: every --flagfile a command line reads, checked before absl reads it;
`check_utf8(argv)`: every word of the command line is UTF-8 (the ranges of numeric flags are
checked by cli/flag_ranges.py).

absl reads a flag file whole, whatever it is (`--flagfile=/dev/zero` reads until memory runs
out), and skips a file that includes itself without a word (the run goes on with the defaults).
Each file named on the command line or inside another flag file is refused here in one line when
it is not a regular UTF-8 file of a bounded size, or when it includes itself, directly or
through others.
"""
import os

from absl import app, flags

from txl_tf.storage.text_files import read_text_file
from untrusted_files.reading import MAX_FLAGFILE_BYTES

BOM = "\ufeff"
_PREFIXES = ("--flagfile=", "-flagfile=")


def _named(args):
    """The flag files named by `args` (command-line words or flag-file lines)."""
    out, args = [], [a.strip() for a in args]
    for i, arg in enumerate(args):
        for prefix in _PREFIXES:
            if arg.startswith(prefix):
                out.append(arg[len(prefix):].strip())
        if arg in ("--flagfile", "-flagfile") and i + 1 < len(args):
            out.append(args[i + 1])
    # absl expands ~ in every flag file name, nested ones too: check the file it will read.
    return [os.path.expanduser(path) for path in out if path]


def _check(path, chain):
    name = f"--flagfile={path}"
    key = os.path.realpath(path)
    if key in chain:
        loop = " -> ".join(list(chain.values())[list(chain).index(key):] + [path])
        raise app.UsageError(f"{name} includes itself ({loop}); remove the --flagfile line "
                             "that leads back to it.")
    if not os.path.exists(path):
        inside = (f" (named in {list(chain.values())[-1]}; a relative path there is read from "
                  "the working directory)" if chain else "")
        raise app.UsageError(f"{name} does not exist{inside}; check the path.")
    if os.path.isdir(path):
        raise app.UsageError(f"{name} is a directory; give a flag file.")
    text = read_text_file(path, name, app.UsageError, max_bytes=MAX_FLAGFILE_BYTES)
    if text.startswith(BOM):  # absl would read it as part of the first flag's name
        raise app.UsageError(f"{name} starts with a UTF-8 byte order mark (BOM); save it as "
                             "UTF-8 without BOM (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE).")
    lines = [line for line in text.splitlines()
             if not line.lstrip().startswith(("#", "//"))]
    for inner in _named(lines):
        _check(inner, {**chain, key: path})


def check_utf8(argv) -> None:
    """Raises `app.UsageError` for a command-line word that is not UTF-8 (Python keeps its
    bytes as surrogates): TensorFlow's file functions and the JSON output need UTF-8, so such a
    path or prompt would fail half-way through the work."""
    for arg in argv[1:]:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as error:
            raw = os.fsencode(arg)
            bad = os.fsencode(arg[:error.start])
            shown = raw.decode("utf-8", "backslashreplace")
            raise app.UsageError(
                f"{shown} is not UTF-8 (byte {raw[len(bad)]:#04x} at offset {len(bad)}); "
                "give paths and text in UTF-8 (rename the file or directory).") from None


def check_flagfiles(argv) -> None:
    """Raises `app.UsageError` for a flag file (of `argv` or nested) that is not a regular
    UTF-8 file of at most `MAX_FLAGFILE_BYTES`, or that includes itself.

    Args:
      argv: the command line (sys.argv).
    """
    for path in _named(argv[1:]):
        _check(path, {})
