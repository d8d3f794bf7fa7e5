"""`JitCompile` (`txl_tf/devices/choices.py`): the one parse of `--jit_compile` that the training
step's choice, generation's choice and the commands' option checks share."""
import itertools

import pytest

from txl_tf.devices.choices import JIT_COMPILE, JitCompile

BAD = ["", "True", "yes", "on", "1", "auto ", "XLA", 1, 0, None, 1.0, ["auto"], b"true"]


@pytest.mark.parametrize("value", JIT_COMPILE)
def test_each_named_setting_parses_to_itself(value):
    parsed = JitCompile.parse(value)
    assert parsed.setting == value and JitCompile.parse(parsed) is parsed
    assert parsed.forced == {"auto": None, "true": True, "false": False}[value]


@pytest.mark.parametrize("value,setting", [(True, "true"), (False, "false")])
def test_a_bool_is_true_or_false(value, setting):
    assert JitCompile.parse(value) == JitCompile(setting)


@pytest.mark.parametrize("value,flag", itertools.product(BAD, ["--jit_compile",
                                                               "--gen_jit_compile"]))
def test_anything_else_is_one_line_naming_the_flag(value, flag):
    with pytest.raises(ValueError) as error:
        JitCompile.parse(value, flag)
    message = str(error.value)
    assert "\n" not in message and message == (
        f"{flag} must be one of {', '.join(JIT_COMPILE)}, got {value!r}.")


def test_the_setting_cannot_be_made_invalid():
    with pytest.raises(ValueError, match="must be one of"):
        JitCompile("sometimes")
    with pytest.raises(Exception):  # frozen
        JitCompile("auto").setting = "true"


@pytest.mark.parametrize("value", BAD)
def test_the_step_and_generation_choices_refuse_as_the_parse_does(value):
    from txl_tf.devices import step_compilation
    with pytest.raises(ValueError) as parsed:
        JitCompile.parse(value)
    with pytest.raises(ValueError) as step:
        step_compilation.choose(value, None, "float32")  # refused before the strategy is read
    with pytest.raises(ValueError) as generation:
        step_compilation.choose_generation(value, "--gen_jit_compile")
    assert str(step.value) == str(parsed.value)
    assert str(generation.value) == str(parsed.value).replace("--jit_compile",
                                                              "--gen_jit_compile")


def test_generation_accepts_a_parsed_setting():
    from txl_tf.devices import step_compilation
    assert step_compilation.choose_generation(JitCompile("true")).mode == "whole"
    assert step_compilation.choose_generation(JitCompile("false")).mode is None


@pytest.mark.parametrize("value", ["on", "", 1])
def test_the_train_options_refuse_as_the_parse_does(value):
    from txl_tf.commands.train_options import TrainError, TrainOptions, checked
    with pytest.raises(ValueError) as parsed:
        JitCompile.parse(value)
    with pytest.raises(TrainError) as error:
        checked(TrainOptions(jit_compile=value))
    assert str(error.value) == str(parsed.value)
    for value in JIT_COMPILE:
        assert checked(TrainOptions(jit_compile=value)).jit_compile == value
