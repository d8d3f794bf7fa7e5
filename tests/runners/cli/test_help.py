"""Every runner's `--help`, as a user types it: all of its own flags, grouped, with their defaults,
none of absl's, at once (TensorFlow is not imported on the help and usage path); missing
required flags named together in one error line.

The flags a runner owns are read from absl's own registry of that runner's process: its
`--helpfull` lists every defined flag by the module that defined it (absl.* for absl's).
"""
import os
import re
import resource
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RUNNERS = ("train", "evaluate", "generate", "export", "prepare_data", "import_weights", "recl",
           "ablation")
ABSL_FLAGS = ("logtostderr", "alsologtostderr", "verbosity", "only_check_args", "pdb",
              "run_with_profiling", "helpxml", "stderrthreshold", "log_dir")
HELP_SECONDS = 3.0
# Shared flags a runner defines but does not take: not in its --help, refused with one line.
NOT_TAKEN = {"ablation": {"model_dir", "attn_type", "half_loss"}}


def run_runner(name, *args):
    """(exit code, stdout, stderr, CPU seconds) of `python runners/<name>.py args`.

    The time is the child's own CPU time (user + system, the kernel's accounting of the reaped
    child, read as the change of this process's RUSAGE_CHILDREN), so that other work on a loaded
    machine does not count against it.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, os.path.join(REPO, "runners", f"{name}.py"), *args],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env=dict(os.environ, PYTHONPATH=REPO))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result.returncode, result.stdout, result.stderr, seconds


def registry(helpfull: str) -> dict:
    """{flag name: default text or None} of the runner's own flags in absl's `--helpfull`
    listing (every module's section except absl's)."""
    own, absl, module, last = {}, set(), None, None
    for line in helpfull.splitlines():
        section = re.match(r"^(\S.*):$", line)
        flag = re.match(r"^  (?:-\?,)?--(?:\[no\])?(\w+):", line)
        default = re.match(r"^    \(default: '(.*)'\)$", line)
        if section:
            module = section.group(1)
        elif flag:
            last = flag.group(1)
            if module and module.startswith("absl."):
                absl.add(last)
            else:
                own.setdefault(last, None)
        elif default and last in own:
            own[last] = default.group(1)
    return {name: value for name, value in own.items() if name not in absl}


@pytest.mark.parametrize("name", RUNNERS)
def test_help_lists_every_own_flag_with_its_default_and_none_of_absl(name):
    code, full, _, _ = run_runner(name, "--helpfull")
    flags = registry(full)
    assert len(flags) >= 5, full[-2000:]
    code, out, err, seconds = run_runner(name, "--help")
    assert code == 0, err
    assert seconds < HELP_SECONDS, f"--help took {seconds:.2f} CPU seconds"
    listing = [line for line in out.splitlines() if line.startswith("  --")]
    shown = {}
    for line in listing:
        match = re.match(r"^  --(?:\[no\])?(\w+)(?:=(\S*))?", line)
        shown[match.group(1)] = match.group(2)
    hidden = NOT_TAKEN.get(name, set())
    assert not hidden & set(shown), f"{name}.py --help lists {hidden & set(shown)}"
    flags = {flag: default for flag, default in flags.items() if flag not in hidden}
    missing = sorted(set(flags) - set(shown))
    assert not missing, f"{name}.py --help does not list {missing}"
    for flag, default in flags.items():
        if default not in (None, "None"):
            default = "" if default == "[]" else default  # an empty multi-flag
            assert shown[flag] == default, (flag, shown[flag], default)
    assert not set(shown) & set(ABSL_FLAGS), sorted(set(shown) & set(ABSL_FLAGS))
    assert set(shown) == set(flags)  # nothing listed that the runner does not define
    assert "--helpfull" in out


def test_train_help_groups_model_training_data_and_its_own():
    _, out, _, _ = run_runner("train", "--help")
    titles = [line for line in out.splitlines() if line.endswith(":") and not line[0].isspace()]
    assert titles[-4:] == ["Model:", "Training:", "Data:", "This command:"], titles
    blocks = dict(re.findall(r"\n(\w[\w ]*):\n((?:  .*\n)+)", out))
    assert "--n_layer=4 " in blocks["Model"] and "--learning_rate " in blocks["Training"]
    assert re.search(r"--level\s+<byte\|char\|word>", blocks["Data"])
    assert "--[no]xla_fusion=false " in blocks["This command"]


def test_prepare_data_help_lists_the_readme_flags():
    _, out, _, _ = run_runner("prepare_data", "--help")
    for flag in ("level", "min_freq", "max_size", "lower_case", "raw_path", "data_dir"):
        assert re.search(rf"^  --(\[no\])?{flag}\b", out, re.M), flag
    assert re.search(r"^  --data_dir .*\(required\)", out, re.M | re.S)


@pytest.mark.parametrize("name,args,named", [
    ("import_weights", [], ["--source", "--model_dir"]),
    ("export", [], ["--model_dir", "--export_dir"]),
    ("prepare_data", ["--dataset=builtin"], ["--data_dir"]),
    ("evaluate", ["--split=valid"], ["--model_dir"]),
])
def test_missing_required_flags_are_named_together_in_one_line(name, args, named):
    code, out, err, seconds = run_runner(name, *args)
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: missing required flag"), err
    for flag in named:
        assert flag in lines[0], (flag, lines[0])
    assert seconds < HELP_SECONDS, f"the usage error took {seconds:.2f} CPU seconds"


@pytest.mark.parametrize("args", [["--bogus=1"], ["--n_layer=x"],
                                  [f"--model_dir={os.path.abspath(__file__)}"]])  # a file
def test_usage_errors_come_at_once(args):
    code, _, err, seconds = run_runner("train", *args)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert seconds < HELP_SECONDS, f"the usage error took {seconds:.2f} CPU seconds"


def test_no_runner_module_imports_tensorflow():
    """What --help and usage errors need (every runner module, its option dataclasses, the
    flag definitions) loads without TensorFlow, which each runner imports in `main`."""
    code = ("import sys\n"
            + "".join(f"import runners.{name}\n" for name in RUNNERS)
            + "from runners.cli import train_flags\n"
            + "from absl import flags\n"
            + "train_flags.define_flags(flags.FlagValues())\n"
            + "print(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('tensorflow', 'keras', 'tensorboard')))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]", result.stdout[-3000:]


@pytest.mark.parametrize("name", RUNNERS)
def test_help_examples_have_no_runs_of_spaces(name):
    """The docstring --help prints keeps an example's line continuation (`\\` and a new
    line), so that no command is glued to its next line's indentation."""
    import importlib
    doc = importlib.import_module(f"runners.{name}").__doc__
    glued = [line for line in doc.splitlines() if re.search(r"\S {5,}--", line)]
    assert not glued, glued


def _definers():
    """runner -> a function defining its flags in a FlagValues (as its `__main__` block does)
    and returning its --help groups."""
    from runners import (ablation, evaluate, export, generate, import_weights, prepare_data)
    from runners.cli import dataclass_flags, train_flags
    from txl_tf.commands.recl_options import ReclOptions
    return {"train": train_flags.define_flags, "evaluate": evaluate.define_flags,
            "generate": generate.define_flags, "export": export.define_flags,
            "import_weights": import_weights.define_flags,
            "prepare_data": prepare_data.define_all_flags,
            "recl": lambda fv: dataclass_flags.define_flags(ReclOptions, fv) and {},
            "ablation": ablation.define_ablation_flags}


@pytest.mark.parametrize("name", RUNNERS)
def test_every_default_shown_is_the_value_used(name):
    """Each flag --help shows with a default, given explicitly with that text, parses to the
    value the runner gets without it (ablation.py's preset applied: tests/runners/cli/
    test_ablation_flags.py compares the options it runs with)."""
    from absl import flags as absl_flags
    from runners.cli import help as help_lib
    fv = absl_flags.FlagValues()
    groups = _definers()[name](fv)
    text = help_lib.help_text(fv, groups or {}, hidden=tuple(NOT_TAKEN.get(name, ())))
    shown = dict(re.findall(r"^  --(?:\[no\])?(\w+)=(\S+)", text, re.M))
    assert shown, text[:2000]
    fv([f"{name}.py"])
    explicit = absl_flags.FlagValues()
    _definers()[name](explicit)
    explicit([f"{name}.py", *[f"--{flag}={value}" for flag, value in shown.items()]])
    def value(flag_values, flag):  # a list flag's items are read as text, then converted
        v = flag_values[flag].value  # by the options (dataclass_flags.options_from_flags)
        return [str(x) for x in v] if isinstance(v, (list, tuple)) else v
    for flag in shown:
        assert value(explicit, flag) == value(fv, flag), (flag, shown[flag], fv[flag].value)
