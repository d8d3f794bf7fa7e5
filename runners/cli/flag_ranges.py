"""The declared range of every numeric flag (`txl_tf.runtime.ranges.Range`), attached where the
flag is defined and checked in one place, `check_flag_ranges`, before a runner's `main` runs.

A flag generated from an options dataclass takes the range its class declares (`RANGES`); a flag
a runner defines itself is defined with `define_integer` / `define_float` and its range. The
range is written at the end of the flag's help ("Range: [1, 2147483647]."), so `--help`, the
check and the tests (tests/runners/cli/test_flag_ranges.py) read the same declaration.

An integer flag defined elsewhere without a range (absl's own `--verbosity`, ...) is held to
int32 (`FALLBACK`): TensorFlow casts a Python int to int32 modulo 2^32 without a word.
"""
import re
from typing import Dict, Optional

from absl import app, flags

from txl_tf.runtime.ranges import INT32_MAX, Range

FALLBACK = Range(-2**31, INT32_MAX, "a 32-bit integer")
ATTRIBUTE = "txl_range"  # the Flag attribute holding its declared Range


def help_text(help_: str, declared: Range) -> str:
    """`help_` with the range appended."""
    why = f" ({declared.why})" if declared.why else ""
    return f"{help_.rstrip()} Range: {declared.text()}{why}."


def attach(flag_values: flags.FlagValues, name: str, declared: Range) -> None:
    """Declares the range of the defined flag `--name` and writes it into its help."""
    flag = flag_values[name]
    setattr(flag, ATTRIBUTE, declared)
    flag.help = help_text(flag.help or "", declared)


def declared_range(flag_values: flags.FlagValues, name: str) -> Optional[Range]:
    """The range declared for `--name`, or None."""
    return getattr(flag_values[name], ATTRIBUTE, None)


def define_integer(name: str, default, help_: str, declared, flag_values=flags.FLAGS) -> None:
    """`flags.DEFINE_integer` with a declared range (a `Range` or a tuple (low, high[, why]))."""
    flags.DEFINE_integer(name, default, help_, flag_values=flag_values)
    attach(flag_values, name, Range.of(declared, integer=True))


def define_float(name: str, default, help_: str, declared, flag_values=flags.FLAGS) -> None:
    """`flags.DEFINE_float` with a declared range; NaN and inf are outside every float range."""
    flags.DEFINE_float(name, default, help_, flag_values=flag_values)
    attach(flag_values, name, Range.of(declared, integer=False))


def ranges_of(flag_values: flags.FlagValues) -> Dict[str, Range]:
    """{flag name: declared Range} of every flag of `flag_values` that has one."""
    out = {}
    for name in flag_values:
        declared = declared_range(flag_values, name)
        if declared is not None:
            out[name] = declared
    return out


def check_value(name: str, value, declared: Range) -> None:
    """Raises `app.UsageError` (one line naming `--name` and its range) for a value outside."""
    if value is None:  # not given: the default of the model or the data
        return
    declared.check(f"--{name}", value, app.UsageError)


def _number(name: str, item, declared: Range):
    """A list flag's item (text) as the number its range takes, or `app.UsageError`."""
    if not isinstance(item, str):
        return item
    try:
        return int(item.strip()) if declared.integer else float(item.strip())
    except ValueError:
        raise app.UsageError(f"--{name} items must each be {declared.describe()}, got "
                             f"{item!r}.") from None


def range_of_error(flag_values: flags.FlagValues, text: str) -> str:
    """' (--name must be ...)' for absl's error `text` about a value of a flag with a declared
    range (a word where a number belongs), else ''."""
    match = re.search(r"flag --(\w+)=", text)
    if not match or match.group(1) not in flag_values:
        return ""
    declared = declared_range(flag_values, match.group(1))
    return f" (--{flag_values[match.group(1)].name} must be {declared.describe()})" if declared \
        else ""


def check_flag_ranges(flag_values: flags.FlagValues) -> None:
    """Raises `app.UsageError` for the first flag whose value is outside its declared range
    (the fallback int32 range for an integer flag that declares none).

    Args:
      flag_values: the parsed `flags.FlagValues`.
    """
    for name in flag_values:
        flag = flag_values[name]
        declared = declared_range(flag_values, name)
        if declared is None:
            if not (flag.present and isinstance(flag.parser, flags.IntegerParser)):
                continue
            declared = FALLBACK
        name = flag.name  # not a short alias (--v for --verbosity)
        if isinstance(flag.value, list):  # a list flag: each item, a number in its text
            for item in flag.value:
                check_value(name, _number(name, item, declared), declared)
        else:
            check_value(name, flag.value, declared)
