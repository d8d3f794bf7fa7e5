"""The declared shape of a JSON value read from elsewhere, checked before any field is used.

A spec is one of the classes below; `check(value, spec, name, error, fix)` raises one line
naming the first field that differs ("corpus-info.json: 'vocab_size' must be an integer in
[1, 2147483647], not 'big'"). Nothing here recurses deeper than the spec itself, and values
are read only after `reading.parse_json` bounded their nesting.

Example:
  >>> spec = Obj({"level": Str(choices=("byte", "char", "word")), "vocab_size": Int(1)},
  ...            required=("level",))
  >>> check({"level": "word", "vocab_size": 3}, spec, "corpus-info.json")
"""
from typing import Optional, Sequence

from untrusted_files.errors import UntrustedFileError

INT64_MAX = 2**63 - 1


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Spec:
    """A declared shape: `problem(value, where)` is None when `value` fits, else the text."""

    def describe(self) -> str:
        raise NotImplementedError

    def problem(self, value, where: str) -> Optional[str]:
        raise NotImplementedError

    def _wrong(self, value, where: str) -> str:
        return f"{where or 'the file'} must be {self.describe()}, not {_shown(value)}"


class Any(Spec):
    """Any JSON value."""

    def describe(self):
        return "any value"

    def problem(self, value, where):
        return None


class Int(Spec):
    """An integer (not a bool) in [lo, hi]."""

    def __init__(self, lo: int = -INT64_MAX - 1, hi: int = INT64_MAX):
        self.lo, self.hi = lo, hi

    def describe(self):
        return f"an integer in [{self.lo}, {self.hi}]"

    def problem(self, value, where):
        ok = isinstance(value, int) and not isinstance(value, bool) and self.lo <= value <= self.hi
        return None if ok else self._wrong(value, where)


class Num(Spec):
    """A number (an integer or a float, not a bool) in [lo, hi]."""

    def __init__(self, lo: float = float("-inf"), hi: float = float("inf")):
        self.lo, self.hi = lo, hi

    def describe(self):
        return f"a number in [{self.lo}, {self.hi}]"

    def problem(self, value, where):
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and self.lo <= value <= self.hi)
        return None if ok else self._wrong(value, where)


class Bool(Spec):
    """true or false."""

    def describe(self):
        return "true or false"

    def problem(self, value, where):
        return None if isinstance(value, bool) else self._wrong(value, where)


class Str(Spec):
    """A string, one of `choices` when given, at most `max_len` characters; `plain_name`: a
    file name without a directory part (no '/', no '..')."""

    def __init__(self, choices: Optional[Sequence[str]] = None, max_len: int = 4096,
                 plain_name: bool = False):
        self.choices, self.max_len, self.plain_name = choices, max_len, plain_name

    def describe(self):
        if self.choices is not None:
            return "one of " + ", ".join(map(repr, self.choices))
        if self.plain_name:
            return "a file name without a directory part"
        return f"a string of at most {self.max_len} characters"

    def problem(self, value, where):
        ok = isinstance(value, str) and len(value) <= self.max_len
        if ok and self.choices is not None:
            ok = value in self.choices
        if ok and self.plain_name:
            ok = value not in ("", ".", "..") and "/" not in value and "\\" not in value \
                and "\0" not in value
        return None if ok else self._wrong(value, where)


class Null(Spec):
    """null."""

    def describe(self):
        return "null"

    def problem(self, value, where):
        return None if value is None else self._wrong(value, where)


class OneOf(Spec):
    """A value that fits one of `specs` (e.g. `OneOf(Str(), Null())`)."""

    def __init__(self, *specs: Spec):
        self.specs = specs

    def describe(self):
        return " or ".join(s.describe() for s in self.specs)

    def problem(self, value, where):
        if any(s.problem(value, where) is None for s in self.specs):
            return None
        return self._wrong(value, where)


class ListOf(Spec):
    """A list of `item`s, `min_len` to `max_len` long."""

    def __init__(self, item: Spec, max_len: int = 1 << 24, min_len: int = 0):
        self.item, self.max_len, self.min_len = item, max_len, min_len

    def describe(self):
        return f"a list of {self.min_len} to {self.max_len} items"

    def problem(self, value, where):
        if not isinstance(value, list) or not self.min_len <= len(value) <= self.max_len:
            return self._wrong(value, where)
        for i, item in enumerate(value):
            found = self.item.problem(item, f"{where}[{i}]")
            if found:
                return found
        return None


class MapOf(Spec):
    """An object whose keys fit `key` (a `Str`) and whose values fit `value`."""

    def __init__(self, value: Spec, key: Spec = Str(), max_len: int = 1 << 24):
        self.value, self.key, self.max_len = value, key, max_len

    def describe(self):
        return "an object"

    def problem(self, value, where):
        if not isinstance(value, dict) or len(value) > self.max_len:
            return self._wrong(value, where)
        for k, v in value.items():
            found = self.key.problem(k, f"a key of {where}") or self.value.problem(
                v, f"{where}[{k!r}]")
            if found:
                return found
        return None


class Obj(Spec):
    """An object with declared `fields` (name -> spec), of which `required` must be present;
    other keys are allowed (files of newer versions) and left unchecked."""

    def __init__(self, fields: dict, required: Sequence[str] = ()):
        self.fields, self.required = fields, tuple(required)

    def describe(self):
        return "an object"

    def problem(self, value, where):
        if not isinstance(value, dict):
            return f"{where or 'the file'} holds a JSON {_json_type(value)}, not an object"
        missing = [k for k in self.required if k not in value]
        if missing:
            return (f"{where or 'it'} lacks {', '.join(map(repr, missing))} (damaged or written by "
                    "another program)")
        for key, spec in self.fields.items():
            if key in value:
                found = spec.problem(value[key], f"{where}[{key!r}]" if where else repr(key))
                if found:
                    return found
        return None


def _json_type(value) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def check(value, spec: Spec, name: str, error=UntrustedFileError,
          fix: str = "give the right file") -> None:
    """Raises `error` ("NAME: PROBLEM; FIX.") when `value` does not fit `spec`."""
    found = spec.problem(value, "")
    if found:
        raise error(f"{name}: {found}; {fix}.")


# -- the files both libraries read --------------------------------------------------------------
INT32_MAX = 2**31 - 1
# The declared shape of corpus-info.json (a data directory's, or the copy in a model directory
# or preset): every field a reader uses, its type and range.
CORPUS_INFO_FIELDS = {
    "dataset": Str(max_len=256),
    "level": Str(choices=("byte", "char", "word")),
    "vocab_size": Int(1, INT32_MAX),
    "vocab_checksum": Str(max_len=128),
    "specials": ListOf(Str(), max_len=INT32_MAX),
    "unk_symbol": OneOf(Str(), Null()),
    "unk_policy": Str(choices=("unk", "error")),
    "cutoffs": ListOf(Int(0, INT32_MAX), max_len=64),
    "num_tokens": MapOf(Int(0)),
    "option_flags": ListOf(Str()),
    "options": MapOf(Any()),
    "text_rules": MapOf(Any()),
    "data_dir": Str(),
}
# What any directory's corpus-info.json must hold to read its vocabulary (a model directory's
# copy may lack the data directory's own fields).
MODEL_INFO_SCHEMA = Obj(CORPUS_INFO_FIELDS, required=("level",))
CORPUS_INFO_SCHEMA = Obj(CORPUS_INFO_FIELDS, required=("dataset", "level", "vocab_size"))
# A corpus-info.json read for one field (its data_dir, level or checksum): types checked,
# nothing required.
INFO_FIELDS_SCHEMA = Obj(CORPUS_INFO_FIELDS)
