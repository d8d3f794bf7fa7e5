"""Every numeric flag of every runner has one declared range (runners/cli/flag_ranges.py), and
the parser of every runner (`cli.app._flags_parser`) accepts the values inside it and refuses
those outside with exit code 2 and one line naming the flag and its range.

In-process: each runner's flags are defined into their own `flags.FlagValues` (the `RUNNERS`
registry: a new runner or flag is covered as soon as it is listed or defined), and hypothesis
draws values from each declared range and just outside it (profiles: tests/support/
hypothesis_profiles.py). tests/runners/test_flag_ranges_runners.py proves, one subprocess per
runner, that the runner runs this check before any work.
"""
import contextlib
import io
import math

import pytest
from absl import flags
from hypothesis import given, strategies as st

import runners.ablation
import runners.evaluate
import runners.export
import runners.generate
import runners.import_weights
import runners.prepare_data
from runners.cli import app as cli_app
from runners.cli import dataclass_flags, flag_ranges, train_flags
from runners.cli import help as help_lib
from txl_tf.commands.recl_options import ReclOptions
from txl_tf.runtime.ranges import Range

# runner -> the function that defines its flags into a FlagValues (what its __main__ calls).
RUNNERS = {
    "train": train_flags.define_flags,
    "evaluate": runners.evaluate.define_flags,
    "generate": runners.generate.define_flags,
    "export": runners.export.define_flags,
    "prepare_data": runners.prepare_data.define_all_flags,
    "import_weights": runners.import_weights.define_flags,
    "ablation": runners.ablation.define_ablation_flags,
    "recl": lambda fv: dataclass_flags.define_flags(ReclOptions, fv),
}
# List flags of names, paths or words (not numbers).
TEXT_LISTS = {"devices", "splits", "variants", "model_dirs"}
_DEFINED = {}


def flag_values(runner: str) -> flags.FlagValues:
    """The runner's flags, defined once into their own FlagValues, back at their defaults."""
    if runner not in _DEFINED:
        fv = flags.FlagValues()
        RUNNERS[runner](fv)
        _DEFINED[runner] = fv
    fv = _DEFINED[runner]
    fv.unparse_flags()
    return fv


def numeric_flags(fv):
    """Names of the integer, float and list flags of `fv` (absl's own excluded)."""
    kinds = (flags.IntegerParser, flags.FloatParser, flags.ListParser)
    return [name for name in fv if fv[name].name == name and isinstance(fv[name].parser, kinds)
            and name not in TEXT_LISTS]


CASES = [(runner, name, flag_ranges.declared_range(flag_values(runner), name))
         for runner in RUNNERS for name in sorted(flag_ranges.ranges_of(flag_values(runner)))]
IDS = [f"{runner}--{name}" for runner, name, _ in CASES]


def parse(runner, *args):
    """(exit code, stderr) of the runner's flag parser on `args` (0: accepted)."""
    fv = flag_values(runner)
    parser = cli_app._flags_parser({}, (), flag_values=fv)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser(["prog", *args])
    except SystemExit as stop:
        return stop.code, err.getvalue()
    return 0, err.getvalue()


def refused(runner, *args):
    """The one stderr line of a refused parse; fails unless the exit code is 2."""
    code, err = parse(runner, *args)
    assert code == 2, (args, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def text(value) -> str:
    """The command-line text of a value (floats round-trip through repr)."""
    return repr(value) if isinstance(value, float) else str(value)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_every_numeric_flag_has_a_declared_range_in_its_help(runner):
    fv = flag_values(runner)
    declared = flag_ranges.ranges_of(fv)
    missing = [name for name in numeric_flags(fv) if name not in declared]
    assert not missing, f"{runner}: flags without a declared range: {missing}"
    for name, range_ in declared.items():
        assert f"Range: {range_.text()}" in fv[name].help, name  # --helpfull's text
        line = " ".join(help_lib.flag_line(fv[name]).split())  # --help's grouped line
        assert f"Range: {range_.text()}." in line, line


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_defaults_are_inside_their_ranges(runner):
    assert parse(runner)[0] == 0


def inside(range_: Range):
    """A strategy of values inside `range_` (its boundaries and special values included)."""
    if range_.integer:
        low = -2**63 if range_.low is None else int(range_.low)
        high = 2**63 - 1 if range_.high is None else int(range_.high)
        values = st.integers(low + 1 if range_.open_low else low,
                             high - 1 if range_.open_high else high)
        edges = [v for v in (low, high) if range_.contains(v)]
    else:
        values = st.floats(range_.low, range_.high, allow_nan=False, allow_infinity=False,
                           exclude_min=range_.open_low and range_.low is not None,
                           exclude_max=range_.open_high and range_.high is not None)
        edges = [v for v in (range_.low, range_.high) if v is not None and range_.contains(v)]
    return st.one_of(values, st.sampled_from(edges + list(range_.also) or [None]).filter(
        lambda v: v is not None))


def outside(range_: Range):
    """A strategy of values just outside `range_` and of the usual hostile ones."""
    if range_.integer:
        near = [] if range_.low is None else [int(range_.low) - 1, int(range_.low) - 2**33]
        near += [] if range_.high is None else [int(range_.high) + 1, int(range_.high) * 2 + 7]
        hostile = [-1, 0, 2**31, 2**31 - 1, 2**32 + 1, 2**63, -2**63 - 1, 10**30]
        drawn = st.integers(-10**30, 10**30)
    else:
        near = [] if range_.low is None else [math.nextafter(range_.low, -math.inf),
                                              range_.low - 1.0]
        near += [] if range_.high is None else [math.nextafter(range_.high, math.inf),
                                                range_.high + 1.0]
        if range_.open_low and range_.low is not None:
            near.append(float(range_.low))
        if range_.open_high and range_.high is not None:
            near.append(float(range_.high))
        hostile = [math.nan, math.inf, -math.inf, -1e308, 1e308]
        drawn = st.floats(allow_nan=True, allow_infinity=True)
    return st.one_of(st.sampled_from(near + hostile), drawn).filter(
        lambda v: not range_.contains(v))


@pytest.mark.parametrize("runner,name,range_", CASES, ids=IDS)
@given(data=st.data())
def test_values_inside_the_range_are_accepted(runner, name, range_, data):
    value = data.draw(inside(range_))
    if isinstance(flag_values(runner)[name].parser, flags.ListParser):
        code = parse(runner, f"--{name}={text(value)},{text(value)}")[0]
    else:
        code = parse(runner, f"--{name}={text(value)}")[0]
    assert code == 0, (name, value)


@pytest.mark.parametrize("runner,name,range_", CASES, ids=IDS)
@given(data=st.data())
def test_values_outside_the_range_are_one_line_naming_the_flag_and_range(
        runner, name, range_, data):
    value = data.draw(outside(range_))
    line = refused(runner, f"--{name}={text(value)}")
    assert f"--{name}" in line and range_.text() in line, line


@pytest.mark.parametrize("runner,name,range_", CASES, ids=IDS)
@pytest.mark.parametrize("word", ["", "abc", "1e3x"])
def test_words_where_a_number_belongs_name_the_flag_and_range(runner, name, range_, word):
    if not word and isinstance(flag_values(runner)[name].parser, flags.ListParser):
        return  # an empty list: none (e.g. --profile_steps=)
    line = refused(runner, f"--{name}={word}")
    assert f"--{name}" in line and range_.text() in line, line


def test_a_64_bit_seed_is_taken_where_it_can_be_honoured_and_refused_with_its_true_range():
    assert parse("generate", f"--seed={2**63 - 1}")[0] == 0  # generation: an int64 seed
    assert parse("prepare_data", f"--seed={2**63 - 1}")[0] == 0  # NumPy's generator
    line = refused("train", f"--seed={2**32}")  # Keras seeds NumPy: 32 bits
    assert "NumPy" in line and "int32 range that TensorFlow" not in line


def test_int32_fallback_for_an_integer_flag_without_a_declared_range(capsys):
    fv = flags.FlagValues()
    flags.DEFINE_integer("undeclared", 0, "An integer flag defined without a range.",
                         flag_values=fv)
    parser = cli_app._flags_parser({}, (), flag_values=fv)
    with pytest.raises(SystemExit) as stop:
        parser(["prog", f"--undeclared={2**31}"])
    assert stop.value.code == 2
    assert flag_ranges.FALLBACK.text() in capsys.readouterr().err
