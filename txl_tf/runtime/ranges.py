"""Declared ranges of the numbers a user gives: one declaration read by the check, the
`--help` text and the property tests. TensorFlow-free.

An options dataclass (or any class) declares its numeric fields in a class attribute `RANGES`:
{field name: spec}, a spec being a `Range` or a plain tuple `(low, high)` / `(low, high, why)`
(tf_records declares plain tuples: it does not import txl_tf). `None` for a bound: unbounded on
that side. A field whose annotation is `Optional[...]` also takes None (the default of the
model or the data).

Example:
  >>> @dataclasses.dataclass
  ... class Options:
  ...     steps: int = 600
  ...     RANGES = {"steps": Range(1, INT32_MAX, "training steps")}
  >>> check_fields(Options(steps=0), ValueError)   # ValueError: steps must be an integer ...
"""
import dataclasses
import math
import numbers
import typing
from typing import Any, Mapping, Optional, Tuple

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a number may take: [low, high] (or [low, high) with `open_high`), plus the
    special values `also` (e.g. -1: none).

    Attributes:
      low: Smallest value (None: unbounded below).
      high: Largest value (None: unbounded above).
      why: What the bound is for, said after the range in messages and in `--help`.
      open_high: `high` itself is excluded (rates below 1).
      also: Values allowed outside [low, high] (a -1 that means none).
      integer: The value must be an integer (a float range otherwise; NaN and inf refused).
      open_low: `low` itself is excluded (a scale that must be > 0).
    """
    low: Optional[float] = None
    high: Optional[float] = None
    why: str = ""
    open_high: bool = False
    also: Tuple[Any, ...] = ()
    integer: bool = True
    open_low: bool = False

    @classmethod
    def of(cls, spec, integer: Optional[bool] = None) -> "Range":
        """`spec` (a Range or a tuple (low, high[, why])) as a Range; `integer` overrides the
        kind (from the field's type)."""
        if not isinstance(spec, Range):
            spec = Range(*spec)
        if integer is not None and integer != spec.integer:
            spec = dataclasses.replace(spec, integer=integer)
        return spec

    def text(self) -> str:
        """The range as messages and `--help` write it, e.g. '[1, 2147483647]' or '[0, 1) or
        -1'."""
        def number(v):
            if v is None:
                return ""
            return f"{v:g}" if isinstance(v, float) else str(v)
        low = number(self.low) if self.low is not None else "-inf"
        high = number(self.high) if self.high is not None else "inf"
        interval = f"[{low}, {high}{')' if self.open_high or self.high is None else ']'}"
        if self.low is None or self.open_low:
            interval = "(" + interval[1:]
        if self.also:
            interval = " or ".join([interval, *map(str, self.also)])
        return interval

    def describe(self) -> str:
        """'an integer in [1, 2147483647] (why)' (or 'a finite number ...')."""
        kind = "an integer" if self.integer else "a finite number"
        why = f" ({self.why})" if self.why else ""
        return f"{kind} in {self.text()}{why}"

    def contains(self, value) -> bool:
        """Whether `value` is allowed (bools are not numbers here)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if value in self.also:
            return True
        if self.integer and not isinstance(value, numbers.Integral):
            return False
        if not self.integer and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.open_high
                                      else value > self.high):
            return False
        return True

    def check(self, name: str, value, error=ValueError):
        """`value` when allowed, else `error` with one line naming `name` and the range.

        Args:
          name: how the message names the value (e.g. '--seg_len' or 'seg_len').
          value: the value given.
          error: the exception class raised.

        Returns:
          `value` (an int for an integer range).
        """
        if not self.contains(value):
            raise error(f"{name} must be {self.describe()}, got {value!r}.")
        return int(value) if self.integer else value


def _optional(annotation) -> Tuple[Any, bool]:
    """(type, whether None is allowed) of a field annotation."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Union and type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return annotation, False


def declared(cls) -> Mapping[str, Range]:
    """{field name: Range} of the class `cls` (or of an instance's class): its `RANGES`, each
    spec's kind (integer or not) taken from the field's annotation."""
    cls = cls if isinstance(cls, type) else type(cls)
    specs = getattr(cls, "RANGES", {}) or {}
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - annotations that do not resolve: take the specs' kinds
        hints = {}
    out = {}
    for name, spec in specs.items():
        kind, _ = _optional(hints.get(name, int))
        out[name] = Range.of(spec, integer=None if kind not in (int, float) else kind is int)
    return out


def numeric_fields(cls) -> Tuple[str, ...]:
    """The fields of the dataclass `cls` whose type is int or float (Optional or not)."""
    hints = typing.get_type_hints(cls)
    return tuple(f.name for f in dataclasses.fields(cls)
                 if _optional(hints[f.name])[0] in (int, float))


def check_fields(instance, error=ValueError, prefix: str = "") -> None:
    """Raises `error` for the first field of `instance` outside its declared range.

    Args:
      instance: a dataclass instance whose class declares `RANGES`.
      error: the exception class raised.
      prefix: put before each field name ('--' for flags, 'TransformerXLConfig: ' ...).
    """
    hints = typing.get_type_hints(type(instance))
    for name, spec in declared(type(instance)).items():
        value = getattr(instance, name)
        if value is None and _optional(hints.get(name, int))[1]:
            continue
        if isinstance(value, (tuple, list)):  # a list of numbers (their texts, from a flag)
            for item in value:
                spec.check(f"{prefix}{name}", number_of(item, spec), error)
        else:
            spec.check(f"{prefix}{name}", value, error)


def number_of(item, spec: Range):
    """`item` as the number `spec` takes when it is the text of one; else `item` unchanged
    (the check then names it)."""
    if not isinstance(item, str):
        return item
    try:
        return int(item.strip()) if spec.integer else float(item.strip())
    except ValueError:
        return item
