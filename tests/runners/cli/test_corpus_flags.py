"""The corpus flags (`runners/cli/data_flags.py`) against the corpora's `OPTIONS`: every option
of every corpus has a flag of its type, every corpus flag is some corpus' option, and a given
flag reaches the corpus under the option's name."""
import json
import os
import subprocess
import sys

from absl import flags

import tf_records
from runners.cli import data_flags

from tiny import SYNTHETIC

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def defined_flags():
    values = flags.FlagValues()
    names = data_flags.define_corpus_flags(values)
    values(["x"])
    return values, names


def option_flags():
    """{flag name: [(corpus, option name, Option)]} read off every corpus' OPTIONS."""
    out = {}
    for corpus_name, corpus in tf_records.CORPORA.items():
        assert list(corpus.OPTIONS) == list(corpus.OPTIONS.specs), corpus_name
        for name, option in corpus.OPTIONS.specs.items():
            out.setdefault(option.flag or name, []).append((corpus_name, name, option))
    return out


def test_every_option_of_every_corpus_has_a_flag_and_every_flag_an_option():
    values, names = defined_flags()
    expected = option_flags()
    assert set(values) == set(expected) == set(names)
    assert "corpus_seed" in expected and "seed" not in values  # --seed is the runners' own
    for flag, takers in expected.items():
        assert values[flag].value is None, flag  # given options only
        for corpus_name, _, option in takers:
            assert corpus_name in values[flag].help, (flag, corpus_name)
            assert option.help in values[flag].help, (flag, corpus_name)
            if option.choices:
                assert list(values[flag].parser.enum_values) == list(option.choices), flag


def test_a_flag_parses_every_default_of_its_option():
    values, _ = defined_flags()
    for flag, takers in option_flags().items():
        for corpus_name, _, option in takers:
            if option.default is None:
                continue
            values.unparse_flags()
            if isinstance(option.default, bool):
                values(["x", f"--{'' if option.default else 'no'}{flag}"])
            else:
                values(["x", f"--{flag}={option.default}"])
            assert values[flag].value == option.default, (corpus_name, flag)


def test_given_flags_reach_the_corpus_under_the_option_names():
    values, _ = defined_flags()
    values.unparse_flags()
    values(["x", "--corpus_seed=7", "--period=40", "--nolower_case"])
    options = data_flags.corpus_options(values)
    assert options == {"seed": 7, "period": 40, "lower_case": False}
    del options["lower_case"]
    corpus = tf_records.get_corpus("synthetic", **options)
    assert (corpus.options["seed"], corpus.options["period"]) == (7, 40)
    assert data_flags.flag_of("seed") == "corpus_seed" and data_flags.flag_of("url") == "url"


def test_the_corpus_seed_flag_prepares_data_with_that_seed(tmp_path):
    """`--corpus_seed` through prepare_data.py: the corpus' own seed next to the runner's
    `--seed`, recorded in corpus-info.json, and another value refused on that data_dir."""
    def prepare(*args):
        return subprocess.run(
            [sys.executable, os.path.join(REPO, "runners", "prepare_data.py"),
             "--dataset=synthetic", f"--data_dir={tmp_path / 'data'}", "--seed=1", *args,
             *[f"--{name}={value}" for name, value in SYNTHETIC.items()]],
            capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))

    proc = prepare("--corpus_seed=5")
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads((tmp_path / "data" / "corpus-info.json").read_text())
    assert info["options"]["seed"] == 5
    again = prepare("--corpus_seed=6")
    assert again.returncode == 2
    assert again.stderr.strip().splitlines()[-1].startswith("error: ") and "seed: 5 -> 6" in \
        again.stderr
