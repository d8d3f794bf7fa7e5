"""`--precision=mixed_bfloat16` (the TPU precision) trains like float32.

The same run (same initial weights, same data, 80 steps on a slice of the built-in byte corpus)
in float32 and in mixed_bfloat16 through `txl_tf.commands.train.train`: both drive the loss far below its start
and below the corpus' unigram entropy, and the bfloat16 losses (train and validation) stay
within a few percent of the float32 ones all along. The checkpointed weights are float32 in both
(bfloat16 is the compute dtype only) and differ between the runs, so bfloat16 was really used.
Both runs with TensorFlow's kernels (`--jit_compile=false`; `auto` would compile the float32 step
with XLA on CPU, not the mixed_bfloat16 one): the precision is what is compared, not the
compiler (mixed_bfloat16 under XLA: tests/training/test_jit_compile.py).
"""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from tf_records import DataOptions, PreparedData
from tiny import train_config
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainOptions

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py


def train_losses(model_dir):
    acc = event_accumulator.EventAccumulator(os.path.join(model_dir, "train"),
                                             size_guidance={"tensors": 0})
    acc.Reload()
    return {e.step: float(tf.make_ndarray(e.tensor_proto)) for e in acc.Tensors("loss")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("precision")
    out = {}
    try:
        for precision in ("float32", "mixed_bfloat16"):
            options = TrainOptions(
                model_dir=str(root / precision), per_host_train_bsz=8,
                learning_rate=5e-3, warmup_steps=10, train_steps=80, steps_per_loop=20,
                log_steps=10, save_steps=80, eval_steps=80, max_eval_batches=4,
                precision=precision, jit_compile="false")
            data = DataOptions(data_dir=str(root / "data"), dataset="builtin",
                               corpus_options={"max_bytes": 120_000})
            summary = train(options, train_config(), PreparedData(data))
            out[precision] = dict(summary=summary, losses=train_losses(options.model_dir),
                                  model_dir=options.model_dir)
    finally:
        keras.config.set_dtype_policy("float32")  # train sets the global policy
    return out


def test_mixed_bfloat16_converges_like_float32(runs):
    f32, bf16 = runs["float32"], runs["mixed_bfloat16"]
    steps = sorted(f32["losses"])
    assert steps == sorted(bf16["losses"]) == list(range(10, 81, 10))
    print("\nstep  float32  mixed_bfloat16")
    for s in steps:
        print(f"{s:>4} {f32['losses'][s]:8.4f} {bf16['losses'][s]:8.4f}")
    print(f"valid {f32['summary']['valid_loss']:.4f} {bf16['summary']['valid_loss']:.4f}")
    baseline = f32["summary"]["unigram_entropy_nats"]
    for run in (f32, bf16):
        first, last = run["losses"][steps[0]], run["losses"][steps[-1]]
        assert last < first - 1.0, run["losses"]
        assert last < baseline - 0.2, (last, baseline)
        assert run["summary"]["valid_loss"] < baseline
    for s in steps:
        assert bf16["losses"][s] == pytest.approx(f32["losses"][s], rel=0.03), s
    assert bf16["summary"]["valid_loss"] == pytest.approx(f32["summary"]["valid_loss"], rel=0.03)


def test_bfloat16_is_compute_only_and_really_used(runs):
    readers = {p: tf.train.load_checkpoint(tf.train.latest_checkpoint(r["model_dir"]))
               for p, r in runs.items()}
    # The model's weights (the checkpoint stores each variable once; most are reached through
    # the optimizer's list of trainable variables).
    names = [n for n in readers["float32"].get_variable_to_shape_map()
             if n.startswith(("model/", "optimizer/_trainable_variables/"))]
    assert len(names) > 10
    dtypes = readers["mixed_bfloat16"].get_variable_to_dtype_map()
    assert all(dtypes[n] == tf.float32 for n in names), {n: dtypes[n] for n in names}
    diff = max(float(np.abs(readers["float32"].get_tensor(n)
                            - readers["mixed_bfloat16"].get_tensor(n)).max()) for n in names)
    print(f"\nmax |weight difference| float32 vs mixed_bfloat16 after 80 steps: {diff:.3g}")
    assert diff > 1e-5  # the bfloat16 run computed in bfloat16 (not float32 again)
