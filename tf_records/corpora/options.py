"""A corpus' options, each defined once: default, help and the type of its flag.

`Corpus.OPTIONS` is a `CorpusOptions`: a dict of option name -> default (what building a corpus
reads) that also keeps each option's `Option`, from which the runners generate the corpus flags
(`runners/cli/data_flags.py`).

Example:
  >>> OPTIONS = CorpusOptions(max_bytes=Option(0, "keep only the first N bytes (0 = all)."))
  >>> OPTIONS["max_bytes"], OPTIONS.specs["max_bytes"].flag_name("max_bytes")
  (0, 'max_bytes')
"""
import dataclasses
from typing import Any, Optional, Tuple

# Help texts of the options several corpora share.
URL_HELP = "download URL of the corpus (default: the reference's URL)."
BACKEND_HELP = "word tokenizer backend (same ids)."
FULL_BYTES_HELP = "256-byte vocabulary, keep newlines."
EVAL_FRACTION_HELP = "fraction for valid and for test."
VERIFY_CHECKSUM_HELP = ("check the canonical size/md5 (--noverify_checksum for a stand-in "
                        "archive).")
BACKENDS = ("python", "tf_text")
INT32_MAX = 2**31 - 1
# Token counts of a corpus held as int32 [N] in memory: at most 2**30 (4 GiB).
MAX_TOKENS = 2**30
EVAL_FRACTION_RANGE = (0.0, 0.45, "valid and test each take this fraction; train the rest")


@dataclasses.dataclass(frozen=True)
class Option:
    """One corpus option.

    Attributes:
      default: The corpus' value when the option is not given.
      help: What it does, for the flag's help (which prefixes the corpora that take it).
      kind: bool, int, float or str: the flag's type; None takes the default's type.
      choices: The allowed values (an enum flag), or () for any value of `kind`.
      flag: The flag's name when it cannot be the option's (the runners' `--seed` is the
        training or record seed, so the corpus seed is `--corpus_seed`).
      range: A number's declared range (low, high, why), both included; None for a bound:
        unbounded. Checked when a corpus is made (`check_range`) and by the corpus flags.
    """

    default: Any
    help: str
    kind: Optional[type] = None
    choices: Tuple[str, ...] = ()
    flag: Optional[str] = None
    range: Optional[Tuple[Any, Any, str]] = None

    def check_range(self, name: str, value, error=ValueError) -> None:
        """Raises `error` (one line naming the option, its flag and range) for a number
        outside `range` (None: the corpus' default)."""
        if self.range is None or value is None:
            return
        low, high, why = self.range
        integer = self.flag_kind is int
        number = (isinstance(value, (int, float)) and not isinstance(value, bool)
                  and (isinstance(value, int) or not integer) and value == value
                  and value not in (float("inf"), float("-inf")))
        if (not number or (low is not None and value < low)
                or (high is not None and value > high)):
            kind = "an integer" if integer else "a finite number"
            shown = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
            raise error(f"corpus option {name} (--{self.flag_name(name)}) must be {kind} in "
                        f"{shown} ({why}), got {value!r}.")

    @property
    def flag_kind(self) -> type:
        """The flag's type: `kind`, else the default's (a programming error when neither)."""
        kind = self.kind or type(self.default)
        if kind not in (bool, int, float, str):
            raise TypeError(f"option with default {self.default!r}: give kind= (bool, int, "
                            "float or str)")
        return kind

    def flag_name(self, name: str) -> str:
        """The flag of the option `name`."""
        return self.flag or name


class CorpusOptions(dict):
    """{option name: default} of a corpus, with each option's `Option` in `specs`.

    Args:
      **specs: option name -> `Option`.
    """

    def __init__(self, **specs: Option):
        super().__init__({name: spec.default for name, spec in specs.items()})
        self.specs = dict(specs)

    def extended(self, **specs: Option) -> "CorpusOptions":
        """These options with `specs` added or replaced (a subclass' options)."""
        return CorpusOptions(**{**self.specs, **specs})
