"""Flags generated from option dataclasses (runners/cli/dataclass_flags.py)."""
import dataclasses
from typing import Optional

import pytest
from absl import flags

from runners.cli.dataclass_flags import attribute_docs, define_flags, given, options_from_flags


@dataclasses.dataclass
class _Options:
    """Options of a test run.

    Attributes:
      steps: Training steps.
      rate: Peak learning rate, written over
        two lines.
      name (str): A name.
      tag: Optional tag.
      devices: Devices to use.
      fast: Go fast.
      mode: One of a, b.

    Example:
      not an attribute: this line ends the section.
    """
    steps: int = 600
    rate: float = 2e-3
    name: str = "x"
    tag: Optional[str] = None
    devices: tuple = ()
    fast: bool = True
    mode: str = "a"


def _parse(argv, **kwargs):
    fv = flags.FlagValues()
    define_flags(_Options, flag_values=fv, enums={"mode": ["a", "b"]}, **kwargs)
    fv(["prog", *argv])
    return fv


def test_attribute_docs_reads_every_entry_with_continuation_lines():
    docs = attribute_docs(_Options)
    assert docs["rate"] == "Peak learning rate, written over two lines."
    assert docs["name"] == "A name."
    assert list(docs) == ["steps", "rate", "name", "tag", "devices", "fast", "mode"]


def test_defaults_come_from_the_dataclass_and_round_trip():
    fv = _parse([])
    assert options_from_flags(_Options, fv) == _Options()
    assert fv["rate"].help == "Peak learning rate, written over two lines."


def test_given_values_types_and_overrides():
    fv = _parse(["--steps=7", "--rate=0.5", "--tag=t", "--devices=/CPU:0,/CPU:1", "--nofast",
                 "--mode=b"])
    options = options_from_flags(_Options, fv, name="set by the runner")
    assert options == _Options(steps=7, rate=0.5, name="set by the runner", tag="t",
                               devices=("/CPU:0", "/CPU:1"), fast=False, mode="b")
    assert given(fv, "steps") and not given(fv, "name")


def test_runner_defaults_and_skipped_fields():
    fv = _parse([], defaults={"steps": 5}, skip=("name",))
    assert "name" not in fv
    assert options_from_flags(_Options, fv, skip=("name",)) == _Options(steps=5)


def test_enum_refuses_other_values():
    with pytest.raises(flags.IllegalFlagValueError):
        _parse(["--mode=c"])


def test_a_field_without_help_is_a_programming_error():
    @dataclasses.dataclass
    class Undocumented:
        """Attributes:
          a: documented.
        """
        a: int = 1
        b: int = 2

    with pytest.raises(ValueError, match="Undocumented.b has no entry"):
        define_flags(Undocumented, flag_values=flags.FlagValues())
