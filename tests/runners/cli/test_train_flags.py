"""runners/train.py flags and flagfiles: every recipe parses, builds a valid model config and a
consistent run; typos are errors (the reference silently ignored them)."""
import os
import re

import pytest
from absl import flags

import txl_tf
from runners.cli import model_flags as flags_model
from runners.train import define_flags, options_from_flags
from txl_tf.model.config import check_against_saved
from txl_tf.commands.train_options import for_level

from tiny import tiny_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Vocabulary sizes of the corpora (reference-implementation.md section 2.2).
N_TOKEN = {"builtin": 256, "enwik8": 204, "text8": 27, "wt103": 267735, "lm1b": 793471}
# (n_layer, d_model, n_head x d_head, d_inner, tgt_len, global batch, lr, steps) per recipe,
# from reference-implementation.md section 4.1.
RECIPES = {
    "enwik8.flags": (24, 1024, 1024, 3072, 768, 64, 2.5e-4, 400000),
    "text8.flags": (24, 1024, 1024, 3072, 768, 64, 2.5e-4, 400000),
    "wt103.flags": (18, 1024, 1024, 4096, 384, 128, 2.5e-4, 4000000),
    "lm1b.flags": (24, 1280, 1280, 8192, 32, 512, 1e-4, 1200000),
    "enwik8_base.flags": (12, 512, 512, 2048, 512, 24, 2.5e-4, 400000),
    "wt103_base.flags": (16, 410, 410, 2100, 150, 60, 2.5e-4, 400000),
}
# The training flagfiles (evaluate.py's eval_*.flags are not for train.py).
FLAGFILES = [os.path.join(REPO, "runners", name) for name in ["default.flags", *RECIPES]]


def parse(args):
    values = flags.FlagValues()
    define_flags(values)
    values(["train.py"] + args)
    return values


def test_no_flags_defaults_are_the_small_default_flagfile():
    """default.flags spells out the no-flags run; the data-dependent defaults (--cutoffs=auto,
    --learning_rate of the level) as they resolve for its byte-level builtin corpus."""
    defaults = parse([])
    spelled = parse([f"--flagfile={os.path.join(REPO, 'runners', 'default.flags')}"])
    for name in defaults:
        if name == "learning_rate":
            _, options = options_from_flags(defaults)
            assert for_level(options, "byte").learning_rate == spelled[name].value
            continue
        assert defaults[name].value == spelled[name].value or name == "cutoffs", name
    assert flags_model.config_from_flags(defaults, N_TOKEN["builtin"]).cutoffs == \
        flags_model.config_from_flags(spelled, N_TOKEN["builtin"]).cutoffs


@pytest.mark.parametrize("path", FLAGFILES, ids=os.path.basename)
def test_flagfile_builds_a_consistent_run(path):
    values = parse([f"--flagfile={path}"])
    data, options = options_from_flags(values)
    config = flags_model.config_from_flags(values, N_TOKEN[data.dataset])
    name = os.path.basename(path)
    if name in RECIPES:
        layers, d, heads, inner, tgt, batch, lr, steps = RECIPES[name]
        assert (config.n_layer, config.d_model, config.n_head * config.d_head, config.d_inner,
                config.tgt_len, options.train_batch_size, options.learning_rate,
                options.train_steps) == (layers, d, heads, inner, tgt, batch, lr, steps)
        assert config.mem_len == config.tgt_len and options.clip == 0.25
    with open(path) as f:
        assert f.readline().startswith("#"), "a flagfile starts with what it reproduces"


def test_unknown_flag_in_a_flagfile_is_an_error(tmp_path):
    path = tmp_path / "typo.flags"
    path.write_text("--n_layer=2\n--num_host=2\n")
    with pytest.raises(flags.Error, match="num_host"):
        parse([f"--flagfile={path}"])


def test_config_mismatch_names_the_fields():
    base = tiny_config(tgt_len=70, mem_len=70, dropout=0.1, dropatt=0.1, init_std=0.02)
    with pytest.raises(txl_tf.ConfigError, match=r"d_head: flags give 4[\s\S]*n_head \* d_head: flags give 16"):
        check_against_saved(base.replace(n_head=4, d_head=4), base.replace(n_head=4, d_head=8),
                            "ckpt")
    check_against_saved(base.replace(mem_len=9, dropout=0.0), base, "x")


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipes_choose_the_strategy_of_the_machine(name):
    """The recipes say --strategy=auto (TPU when given or attached, else GPUs, else the CPU);
    --strategy on the command line after the flagfile still forces one."""
    path = os.path.join(REPO, "runners", name)
    assert parse([f"--flagfile={path}"]).strategy == "auto"
    assert parse([f"--flagfile={path}", "--strategy=tpu"]).strategy == "tpu"


def test_data_flags_given_or_recorded():
    """--dataset not given: the one data_dir records (None); corpus flags and --corpus_option
    reach the corpus with their types, only when given."""
    assert options_from_flags(parse([]))[0].dataset is None
    assert options_from_flags(parse([]))[0].corpus_options == {}
    data, options = options_from_flags(parse([
        "--dataset=text", "--level=word", "--nolower_case", "--unk_policy=unk",
        "--corpus_option=verify_checksum=false", "--corpus_option=eval_bytes=5000",
        "--corpus_option=eval_fraction=0.1", "--max_per_replica_batch=4"]))
    assert data.dataset == "text" and options.max_per_replica_batch == 4
    assert data.corpus_options == {"level": "word", "lower_case": False, "unk_policy": "unk",
                                      "verify_checksum": False, "eval_bytes": 5000,
                                      "eval_fraction": 0.1}


def test_prepare_data_and_train_share_the_corpus_flags_and_layout():
    """Every corpus option prepare_data.py takes, train.py takes too; prepare_data.py's default
    records are the layout of train.py's defaults."""
    import subprocess
    import sys
    helps = subprocess.run([sys.executable, os.path.join(REPO, "runners", "prepare_data.py"),
                            "--helpfull"], capture_output=True, text=True, cwd=REPO,
                           env=dict(os.environ, PYTHONPATH=REPO))
    for name, default in (("tgt_len", 64), ("per_replica_batch", 16)):
        assert re.search(rf"\n  --{name}: [^\n]*(\n    [^(\n][^\n]*)*\n    \(default: '{default}'\)",
                         helps.stdout), name
    from runners.cli.data_flags import corpus_flag_specs
    values = parse([])
    for name in corpus_flag_specs():
        assert re.search(rf"--(\[no\])?{name}:", helps.stdout), name
        assert values[name].value is None, name
    assert (values.tgt_len, values.per_host_train_bsz, values.per_host_valid_bsz) == (64, 16, 0)


def test_model_flags_are_generated_from_the_config():
    """Without a preset the model flags build the config's own defaults; each flag's help is the
    config's Attributes: entry; SMALL_MODEL is train.py's no-flags model."""
    import dataclasses
    from runners.cli.dataclass_flags import attribute_docs
    values = flags.FlagValues()
    flags_model.define_model_flags(values)
    values(["x"])
    assert flags_model.config_from_flags(values, 50) == txl_tf.TransformerXLConfig(n_token=50)
    docs = attribute_docs(txl_tf.TransformerXLConfig)
    fields = {f.name for f in dataclasses.fields(txl_tf.TransformerXLConfig)}
    assert set(docs) == fields
    for name in fields - {"n_token", "cutoffs", "layer_norm_epsilon"}:
        # enums add <a|b>: in front; numbers their declared range (cli/flag_ranges.py) behind
        assert docs[name] in values[name].help, name
    assert values.d_embed == -1 and values.cutoffs == "auto"
    small = flags_model.config_from_flags(parse([]), 50)
    assert {k: getattr(small, k) for k in flags_model.SMALL_MODEL} == flags_model.SMALL_MODEL


def test_cutoffs_auto_takes_the_corpus_ones_else_chooses_them_for_a_large_vocabulary():
    from txl_tf.model.config import AUTO_CUTOFFS_MIN_VOCAB
    values = parse([])
    assert values.cutoffs == "auto"
    big = AUTO_CUTOFFS_MIN_VOCAB + 5_000
    config = flags_model.config_from_flags(values, big)
    assert config.cutoffs == (big // 16 // 100 * 100, big // 4 // 100 * 100)
    assert flags_model.config_from_flags(values, AUTO_CUTOFFS_MIN_VOCAB - 1).cutoffs == ()
    # The corpus' own cutoffs win; 'none' and explicit ids are kept as given.
    assert flags_model.config_from_flags(values, 267735, (20000, 40000, 200000)).cutoffs == \
        (20000, 40000, 200000)
    assert flags_model.config_from_flags(parse(["--cutoffs=none"]), big).cutoffs == ()
    assert flags_model.config_from_flags(parse(["--cutoffs=100,900"]), big).cutoffs == (100, 900)


def test_the_learning_rate_default_is_the_level_one_and_a_given_one_is_kept():
    _, options = options_from_flags(parse([]))
    assert options.learning_rate is None
    assert for_level(options, "word").learning_rate == 1e-3
    assert for_level(options, "byte").learning_rate == for_level(options, "char").learning_rate \
        == 2e-3
    _, given = options_from_flags(parse(["--learning_rate=5e-4"]))
    assert for_level(given, "word").learning_rate == 5e-4
