"""The context curve: `evaluate.py --mem_lens=...` scores the same split at several memory
lengths in one run, each point equal to a separate `--mem_len` evaluation."""
import json

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

import txl_tf
from runners import evaluate
from runner_calls import REPO, call_runner, run_runner
from tf_records.vocab.model_vocab import write_model_vocab
from tf_records import PreparedData
from tiny import tiny_model
from txl_tf.commands.evaluate import EvalOptions

@pytest.fixture(scope="module")
def model_dir(synthetic_data_dir, tmp_path_factory):
    """A random one-layer tiny model over the synthetic corpus's 16 symbols, with its vocabulary
    (the curve does not depend on the stacking of layers)."""
    path = str(tmp_path_factory.mktemp("curve") / "model")
    txl_tf.save_model(tiny_model(seed=5, n_token=16, n_layer=1, init_std=0.5), path)
    data = PreparedData(synthetic_data_dir)
    write_model_vocab(path, data.vocabulary().vocab, data.vocabulary().rules)
    return path


def _options(model_dir, data_dir, tb_dir, **changes):
    return EvalOptions(model_dir=model_dir, data_dir=data_dir, split="valid", batch_size=4,
                       tb_dir=tb_dir, progress=False, **changes)


def test_each_point_equals_a_separate_evaluation(model_dir, synthetic_data_dir, tmp_path):
    tb_dir = str(tmp_path / "tb")
    out = evaluate.run(_options(model_dir, synthetic_data_dir, tb_dir, mem_lens=("0", "3", "9")))
    assert [p["mem_len"] for p in out["curve"]] == [0, 3, 9]
    for point in out["curve"]:
        alone = evaluate.run(_options(model_dir, synthetic_data_dir, "", mem_len=point["mem_len"]))
        assert point["tokens"] == alone["tokens"] > 0
        np.testing.assert_allclose(point["loss"], alone["loss"], rtol=1e-6)
    assert len({round(p["loss"], 6) for p in out["curve"]}) == 3  # memory changes the loss
    assert out["loss"] == out["curve"][-1]["loss"] and out["mem_len"] == 9
    events = event_accumulator.EventAccumulator(tb_dir, size_guidance={"tensors": 0})
    events.Reload()
    curve = {e.step: float(tf.make_ndarray(e.tensor_proto))
             for e in events.Tensors("eval/loss_by_mem_len")}
    assert sorted(curve) == [0, 3, 9]
    np.testing.assert_allclose([curve[m] for m in (0, 3, 9)],
                               [p["loss"] for p in out["curve"]], rtol=1e-6)


def _cli(*args):
    """evaluate.py on `args` as a user types it: a process of its own, started from this
    checkout (under Bazel: from the runfiles; docs/testing.md's `ci` targets)."""
    return run_runner("evaluate", list(args), cwd=REPO, timeout=300)


def test_command_line_prints_one_line_per_length_and_the_json(model_dir, synthetic_data_dir):
    result = _cli(f"--model_dir={model_dir}", f"--data_dir={synthetic_data_dir}",
                  "--split=valid", "--batch_size=4", "--mem_lens=0,6", "--noprogress")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("mem_len")]
    assert len(lines) == 2 and "loss" in lines[0]
    assert [p["mem_len"] for p in json.loads(result.stdout)["curve"]] == [0, 6]


@pytest.mark.parametrize("args, message", [
    (["--mem_lens=0,-4"], "--mem_lens must be an integer in [0, 2147483647] (memory lengths), got -4"),
    (["--mem_lens=0,x"], "got 'x'"),
    (["--mem_lens=0,4", "--mem_len=8"], "give --mem_len or --mem_lens, not both"),
])
def test_bad_lengths_are_one_line(model_dir, synthetic_data_dir, args, message):
    result = call_runner("evaluate", [f"--model_dir={model_dir}",
                                      f"--data_dir={synthetic_data_dir}", "--split=valid", *args],
                         cwd=REPO)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
