"""absl flags generated from option dataclasses, so that every default is written once.

A runner's options are a dataclass of the library (e.g. `TrainOptions`) whose docstring has a
Google-style `Attributes:` section. `define_flags` turns each field into a flag with the field's
default and the attribute's text as help; `options_from_flags` builds the dataclass back from the
parsed flags.

Example:
  >>> @dataclasses.dataclass
  ... class Options:
  ...     '''Attributes:
  ...       steps: Training steps.
  ...     '''
  ...     steps: int = 600
  >>> define_flags(Options)            # --steps, default 600, help "Training steps."
  >>> options_from_flags(Options)      # Options(steps=FLAGS.steps)
"""
import dataclasses
import math
import re
import typing
from typing import Any, Collection, Mapping, Optional

from absl import flags

from runners.cli import flag_ranges
from txl_tf.runtime.ranges import Range, declared

_ATTRIBUTE = re.compile(r"^(\s*)(\w+)(?: \([^)]*\))?: ?(.*)$")


def attribute_docs(cls) -> dict:
    """{field name: help text} from the `Attributes:` section of `cls`'s docstring.

    Each entry is `name: text`, continued on lines indented deeper than the name; the section
    ends at the first line indented less than its entries (or the end of the docstring).
    """
    lines = (cls.__doc__ or "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Attributes:")
    except StopIteration:
        return {}
    docs, name, indent = {}, None, None
    for line in lines[start + 1:]:
        if not line.strip():
            continue
        match = _ATTRIBUTE.match(line)
        width = len(line) - len(line.lstrip())
        if match and (indent is None or width == indent):
            indent, name = width, match.group(2)
            docs[name] = match.group(3).strip()
        elif indent is not None and width > indent and name:
            docs[name] += " " + line.strip()
        else:
            break
    return docs


def _base_type(annotation) -> tuple:
    """(type, optional) of a field annotation: Optional[int] -> (int, True)."""
    if isinstance(annotation, str):
        annotation = eval(annotation, vars(typing))  # noqa: S307 - the dataclass's own annotation
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Union and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return annotation, False


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def define_flags(cls, flag_values: flags.FlagValues = flags.FLAGS,
                 defaults: Optional[Mapping[str, Any]] = None,
                 enums: Optional[Mapping[str, Collection[str]]] = None,
                 skip: Collection[str] = (),
                 ranges: Optional[Mapping[str, Any]] = None) -> list:
    """Define one flag per field of the dataclass `cls`.

    Args:
      cls: a dataclass whose docstring documents every field under `Attributes:`.
      flag_values: where to define them (tests use their own `flags.FlagValues()`).
      defaults: field -> default overriding the dataclass's (e.g. a runner's preset).
      enums: field -> allowed values: an enum flag.
      skip: fields that get no flag (set by the runner itself).
      ranges: field -> range overriding the one `cls.RANGES` declares (a flag spelling such as
        `--d_embed=-1`); each numeric flag gets its range (cli/flag_ranges.py).

    Returns:
      The names of the flags defined, in field order (a group of the runner's `--help`).

    Raises:
      ValueError: a field has no help text or a type no flag can carry (a programming error).
    """
    docs, defaults, enums = attribute_docs(cls), dict(defaults or {}), dict(enums or {})
    hints, names = typing.get_type_hints(cls), []
    declared_ranges = {**declared(cls), **{k: Range.of(v) for k, v in (ranges or {}).items()}}
    for field in dataclasses.fields(cls):
        if field.name in skip:
            continue
        names.append(field.name)
        if field.name not in docs:
            raise ValueError(f"{cls.__name__}.{field.name} has no entry under Attributes:")
        kind, _ = _base_type(hints[field.name])
        default = defaults.get(field.name, _default(field))
        args = dict(name=field.name, default=default, help=docs[field.name],
                    flag_values=flag_values)
        if field.name in enums:
            flags.DEFINE_enum(enum_values=list(enums[field.name]), **args)
        elif kind is bool:
            flags.DEFINE_bool(**args)
        elif kind is int:
            flags.DEFINE_integer(**args)
        elif kind is float:
            flags.DEFINE_float(**args)
            if field.name not in declared_ranges:
                _refuse_non_finite(field.name, flag_values)
        elif kind is str:
            flags.DEFINE_string(**args)
        elif typing.get_origin(kind) in (tuple, list) or kind in (tuple, list):
            flags.DEFINE_list(**{**args, "default": list(default or [])})
        else:
            raise ValueError(f"{cls.__name__}.{field.name}: no flag type for {kind!r}")
        if field.name in declared_ranges and field.name not in enums:
            flag_ranges.attach(flag_values, field.name, declared_ranges[field.name])
    return names


def _refuse_non_finite(name: str, flag_values: flags.FlagValues) -> None:
    """A float flag refuses nan and inf (NaN compares false, so range checks let it through)."""
    flags.register_validator(
        name, lambda value: value is None or math.isfinite(value),
        message=f"--{name} must be a finite number (not nan or inf)", flag_values=flag_values)


def options_from_flags(cls, flag_values: flags.FlagValues = flags.FLAGS,
                       skip: Collection[str] = (), **values):
    """The dataclass `cls` from the parsed flags of `define_flags(cls, ...)`.

    Args:
      cls: the dataclass.
      flag_values: the parsed flags.
      skip: fields without a flag (they keep the dataclass default unless given in `values`).
      **values: fields set by the runner itself; they win over flags.

    Returns:
      A `cls` instance; list flags become tuples where the field's default is a tuple.
    """
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name in skip or field.name in values:
            continue
        value = flag_values[field.name].value
        kind, _ = _base_type(hints[field.name])
        if isinstance(value, list) and (kind is tuple or typing.get_origin(kind) is tuple):
            value = tuple(value)
        values[field.name] = value
    return cls(**values)


def given(flag_values: flags.FlagValues, name: str) -> bool:
    """Whether `--name` was given on the command line or in a flagfile."""
    return flag_values[name].present > 0
