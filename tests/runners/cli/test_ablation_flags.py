"""`runners/ablation.py`'s flags: its --help shows the defaults the default preset trains with
(and only flags it takes), every flag shown there may be given with its shown value and changes
nothing, the other presets keep their own values, and the train.py flags it does not take are
refused in one line. In-process on fresh `FlagValues` (no training), plus the runner itself for
the refusals."""
import dataclasses
import os
import re
import subprocess
import sys

import pytest
from absl import flags

from runners import ablation
from runners.cli import help as help_lib
from runners.cli.model_flags import SMALL_MODEL, template_from_flags
from runners.cli.train_flags import options_from_flags

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def parsed(*args):
    """Fresh FlagValues of ablation.py parsed from `args`, the preset applied."""
    fv = flags.FlagValues()
    groups = ablation.define_ablation_flags(fv)
    fv(["ablation.py", *args])
    ablation.apply_preset(fv)
    return fv, groups


def used(fv):
    """What the experiment runs with: data options, train options (without the flags text)
    and the model template."""
    data, train = options_from_flags(fv)
    return data, dataclasses.replace(train, flags_text=""), template_from_flags(fv)


def shown_defaults(fv, groups):
    """{flag: default text} of every flag --help shows with a default."""
    text = help_lib.help_text(fv, groups, hidden=tuple(ablation.REFUSED_FLAGS))
    return dict(re.findall(r"^  --(?:\[no\])?(\w+)=(\S+)", text, re.M)), text


def test_help_shows_the_default_preset_values_and_only_flags_it_takes():
    fv, groups = parsed()
    shown, text = shown_defaults(fv, groups)
    preset = ablation.PRESETS[ablation.DEFAULT_PRESET]
    for name, value in preset.items():  # e.g. --n_layer=2, --root=runs/ablation-synthetic
        assert shown[name] == str(value), (name, shown.get(name), value)
    for name in ablation.REFUSED_FLAGS:
        assert not re.search(rf"^  --(\[no\])?{name}\b", text, re.M), name


def test_every_shown_default_given_explicitly_changes_nothing():
    fv, groups = parsed()
    shown, _ = shown_defaults(fv, groups)
    explicit, _ = parsed(*[f"--{name}={value}" for name, value in shown.items()])
    assert used(explicit) == used(fv)
    assert explicit.root == "runs/ablation-synthetic"


def test_other_presets_keep_their_own_values():
    builtin, _ = parsed("--preset=builtin")
    assert (builtin.n_layer, builtin.root, builtin.dataset) == (4, "runs/ablation-builtin",
                                                                "builtin")
    assert builtin.num_symbols is None  # the synthetic preset's corpus flag is not carried over
    none, _ = parsed("--preset=none")
    assert none.n_layer == SMALL_MODEL["n_layer"] and none.root == "runs/ablation"
    assert none.learning_rate is None and none.num_symbols is None
    given, _ = parsed("--preset=builtin", "--n_layer=3")
    assert given.n_layer == 3  # a given flag wins over the preset


@pytest.mark.parametrize("arg, message", [
    ("--model_dir=runs/x", "--model_dir is not taken: each variant trains into "
                           "--root/<variant> (give --root); drop --model_dir."),
    ("--attn_type=1", "--attn_type is set by each variant"),
    ("--half_loss", "--half_loss is set by each variant"),
])
def test_flags_it_does_not_take_are_refused_in_one_line(tmp_path, arg, message):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "runners", "ablation.py"), arg],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and os.listdir(tmp_path) == []
