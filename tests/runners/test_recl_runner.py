"""`runners/recl.py` with the flags a user types (in this process: `runner_calls.call_runner`):
the table, the JSON line and bad inputs.

The models are random (untrained), so the RECL values themselves are not checked here (the
algorithm is tested on hand-made losses in tests/inference/test_recl.py): this checks that the
runner reads the models and the split, scores every model on the same grid and reports each.
"""
import json

import keras
import pytest

import tf_records
import txl_tf

from runner_calls import call_runner
from tiny import tiny_config


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    """A synthetic data dir and two tiny model dirs (with and without memory)."""
    root = tmp_path_factory.mktemp("recl")
    data_dir = str(root / "data")
    tf_records.prepare("synthetic", data_dir, progress=False, num_symbols=8, period=12,
                       train_tokens=2000, eval_tokens=600)
    dirs = []
    for mem_len in (8, 0):
        keras.utils.set_random_seed(mem_len)
        config = tiny_config(n_token=8, tgt_len=8, mem_len=mem_len, dropout=0.1, dropatt=0.1,
                             init_std=0.02)
        model_dir = str(root / f"m{mem_len}")
        txl_tf.save_model(txl_tf.TransformerXL(config), model_dir)
        dirs.append(model_dir)
    return data_dir, dirs


def _run(*args):
    return call_runner("recl", args)


def test_table_and_json_line_for_every_model(group):
    data_dir, dirs = group
    result = _run(f"--model_dirs={','.join(dirs)}", f"--data_dir={data_dir}",
                  "--context_lengths=4,8,12", "--num_tokens=50")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("model"))
    assert header.split() == ["model", "r=0.1", "r=0.5", "r=1.0"]
    record = json.loads(next(line for line in lines if line.startswith("recl "))[5:])
    assert [row["model"] for row in record["models"]] == ["m8", "m0"]
    assert record["context_lengths"] == [4, 8, 12] and record["num_tokens"] == 50
    for row in record["models"]:
        assert set(row["recl"]) == {"0.1", "0.5", "1.0"}
        assert all(value in (4, 8, 12) for value in row["recl"].values())


@pytest.mark.parametrize("args, message", [
    (["--context_lengths=4,6,12"], "evenly spaced"),
    (["--context_lengths=4,8", "--num_tokens=0"], "--num_tokens must be an integer in [1, "),
    (["--context_lengths=400,800"], "at least 801 are needed"),
    (["--split=nosuch"], "nosuch"),
    (["--threshold=-1"], "--threshold must be a finite number in (0, 1) (a relative gain"),
    (["--threshold=nan"], "--threshold must be a finite number in (0, 1)"),
    (["--batch_tokens=0"], "--batch_tokens must be an integer in [1, "),
])
def test_bad_inputs_are_one_line(group, args, message):
    data_dir, dirs = group
    result = _run(f"--model_dirs={dirs[0]}", f"--data_dir={data_dir}", *args)
    assert result.returncode in (1, 2)
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr


def test_missing_model_dir_and_missing_group(group, tmp_path):
    result = _run(f"--model_dirs={tmp_path / 'nope'}")
    assert result.returncode == 2 and "config.json not found" in result.stderr
    result = _run()
    assert result.returncode == 2 and "--model_dirs" in result.stderr


def test_json_reports_the_tokens_really_scored(group):
    """The valid split has 600 tokens: 588 have 12 tokens before them, fewer than requested."""
    data_dir, dirs = group
    result = _run(f"--model_dirs={dirs[1]}", f"--data_dir={data_dir}", "--context_lengths=4,8,12",
                  "--num_tokens=100000")
    assert result.returncode == 0, result.stderr
    record = json.loads(next(line for line in result.stdout.splitlines()
                             if line.startswith("recl "))[5:])
    tokens = tf_records.load_token_stream(data_dir, "valid")
    assert record["num_tokens"] == len(tokens) - 12 and record["num_tokens_requested"] == 100000


@pytest.fixture(scope="module")
def other_vocabulary(tmp_path_factory):
    """A model directory trained (by record) on another vocabulary of the same size, and one of
    another size."""
    root = tmp_path_factory.mktemp("recl_other")
    other_data = str(root / "data")
    tf_records.prepare("synthetic", other_data, progress=False, num_symbols=9, period=12,
                       train_tokens=2000, eval_tokens=600)
    dirs = {}
    for name, n_token in (("bytes", 8), ("words", 12)):
        model_dir = str(root / name)
        txl_tf.save_model(txl_tf.TransformerXL(tiny_config(n_token=n_token, tgt_len=8,
                                                           mem_len=8)), model_dir)
        dirs[name] = model_dir
    tf_records.PreparedData(tf_records.DataOptions(data_dir=other_data, dataset=None)).copy_to(
        dirs["bytes"])
    return dirs


@pytest.mark.parametrize("which", ["bytes", "words"])
def test_group_of_two_vocabularies_is_refused_before_any_work(group, other_vocabulary, which):
    data_dir, dirs = group
    result = _run(f"--model_dirs={dirs[0]},{other_vocabulary[which]}", f"--data_dir={data_dir}",
                  "--context_lengths=4,8,12", "--num_tokens=50")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: the group does not share one vocabulary: ")
    assert other_vocabulary[which] in result.stderr and result.stderr.count("\n") == 1
    assert "recl " not in result.stdout
