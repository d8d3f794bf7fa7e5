"""`check_flagfiles(argv)`: every --flagfile a command line reads, checked before absl reads it;
`check_utf8(argv)`: every word of the command line is UTF-8; `check_int32_flags`: every integer
flag given fits int32.

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

_PREFIXES = ("--flagfile=", "-flagfile=")


def _named(args):
    """The flag files named by `args` (command-line words or flag-file lines)."""
    out, args = [], [a.strip() for a in args]
    for i, arg in enumerate(args):
        for prefix in _PREFIXES:
            if arg.startswith(prefix):
                out.append(arg[len(prefix):])
        if arg in ("--flagfile", "-flagfile") and i + 1 < len(args):
            out.append(args[i + 1])
    return out


def _check(path, chain):
    name = f"--flagfile={path}"
    key = os.path.realpath(path)
    if key in chain:
        loop = " -> ".join(list(chain.values())[list(chain).index(key):] + [path])
        raise app.UsageError(f"{name} includes itself ({loop}); remove the --flagfile line "
                             "that leads back to it.")
    if not os.path.exists(path):
        raise app.UsageError(f"{name} does not exist; check the path.")
    if os.path.isdir(path):
        raise app.UsageError(f"{name} is a directory; give a flag file.")
    text = read_text_file(path, name, app.UsageError, max_bytes=MAX_FLAGFILE_BYTES)
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


INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
# Counts of a corpus (--max_bytes, --eval_chars, --train_tokens, ...) may exceed int32; the
# commands that compute with them check their own ranges.
_COUNTS = ("bytes", "chars", "tokens")


def check_int32_flags(flag_values) -> None:
    """Raises `app.UsageError` for an integer flag given beyond int32: lengths, sizes, steps and
    seeds become int32 tensors, and TensorFlow's cast wraps them modulo 2^32 without a word
    (`--clamp_len=4294967297` would run as 1).

    Args:
      flag_values: the parsed `flags.FlagValues`.
    """
    for name in flag_values:
        if any(word in name for word in _COUNTS):
            continue
        flag = flag_values[name]
        value = flag.value
        if (flag.present and isinstance(flag.parser, flags.IntegerParser)
                and isinstance(value, int) and not INT32_MIN <= value <= INT32_MAX):
            raise app.UsageError(f"--{name}={value} is beyond the int32 range [{INT32_MIN}, "
                                 f"{INT32_MAX}] that TensorFlow computes it in; give a smaller "
                                 "value.")


def check_flagfiles(argv) -> None:
    """Raises `app.UsageError` for a flag file (of `argv` or nested) that is not a regular
    UTF-8 file of at most `MAX_FLAGFILE_BYTES`, or that includes itself.

    Args:
      argv: the command line (sys.argv).
    """
    for path in _named(argv[1:]):
        _check(path, {})
