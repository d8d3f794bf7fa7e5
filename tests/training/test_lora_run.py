"""runners/train.py --lora_rank with --init_checkpoint (its flags parsed as the runner parses
them, the run in process): a model trained on one corpus fine-tuned with LoRA on another trains
only the adapters (every other weight stays the first model's), records lora.json, and its
model directory loads (with the adapters) and resumes; bad values give one line. That the
adapters lower a held-out loss is shown on real text by runners/tools/int8_lora_figures.py
(docs/keras.md): these tiny runs stay near the unigram baseline."""
import os

import numpy as np
import pytest
from absl import flags

import txl_tf
from runners.train import define_flags, options_from_flags, template_from_flags
from tf_records import PreparedData
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainError
from txl_tf.storage.lora_record import read_lora_record

from tiny import SYNTHETIC, TRAIN_FLAGS

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

STEPS = ["--warmup_steps=2", "--steps_per_loop=5", "--log_steps=5", "--save_steps=10",
         "--eval_steps=10", "--max_eval_batches=2", "--per_host_train_bsz=4",
         "--learning_rate=1e-2", "--dropout=0.0", "--dropatt=0.0",
         "--jit_compile=false"]  # XLA's compilation was most of each run; not what is tested


def run(args):
    """train.py's flags parsed in process, then the run: its summary."""
    values = flags.FlagValues()
    define_flags(values)
    values(["train.py"] + TRAIN_FLAGS + STEPS + args)
    data, options = options_from_flags(values)
    return train(options, template_from_flags(values), PreparedData(data))


def corpus(root, name, period):
    options = dict(SYNTHETIC, period=period)
    return [f"--data_dir={root / name}", "--dataset=synthetic"] + [
        f"--corpus_option={k}={v}" for k, v in options.items()]


def weights(model):
    """{path under the model: value} of every weight."""
    prefix = model.name + "/"
    return {v.path[len(prefix):]: v.numpy() for v in model.weights}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora")
    first = str(root / "first")
    run(corpus(root, "a", 24) + [f"--model_dir={first}", "--train_steps=10"])
    tuned_dir = str(root / "tuned")
    tuned = run(corpus(root, "b", 10) + [f"--model_dir={tuned_dir}", "--train_steps=20",
                                         "--lora_rank=4", f"--init_checkpoint={first}"])
    return dict(root=root, first=first, tuned_dir=tuned_dir, tuned=tuned)


def test_lora_trains_only_the_adapters(runs):
    assert read_lora_record(runs["tuned_dir"]) == {"rank": 4, "targets": ["qkv", "o"]}
    first = weights(txl_tf.load_model(runs["first"]))
    tuned = weights(txl_tf.load_model(runs["tuned_dir"]))
    adapters = sorted(n for n in tuned if "lora" in n)
    assert len(adapters) == 2 * 2 * 2  # (a, b) x (qkv, o) x 2 layers
    assert all(np.any(tuned[n] != 0) for n in adapters)  # trained (b starts at zero)
    assert set(tuned) - set(adapters) == set(first)
    for name, value in first.items():
        np.testing.assert_array_equal(tuned[name], value, err_msg=name)
    assert runs["tuned"]["step"] == 20


def test_the_tuned_directory_loads_with_its_adapters_and_resumes(runs):
    model = txl_tf.load_model(runs["tuned_dir"])
    assert sum("lora" in v.path for v in model.trainable_weights) == 8
    summary = run(corpus(runs["root"], "b", 10) + [f"--model_dir={runs['tuned_dir']}",
                                                    "--train_steps=25"])
    assert summary["step"] == 25 and summary["resumed"]
    with pytest.raises(TrainError, match="--lora_rank=8 but .* rank 4"):
        run(corpus(runs["root"], "b", 10) + [f"--model_dir={runs['tuned_dir']}",
                                             "--train_steps=30", "--lora_rank=8"])


def test_a_negative_rank_is_one_line(tmp_path):
    with pytest.raises(TrainError, match=r"--lora_rank must be an integer in \[0, "):
        run(corpus(tmp_path, "b", 10) + [f"--model_dir={tmp_path / 'm'}", "--lora_rank=-1"])
