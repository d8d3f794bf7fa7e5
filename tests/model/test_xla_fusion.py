"""`--xla_fusion` (txl_tf/training/xla_clustering.py): XLA auto-clusters the element-wise ops, oneDNN
keeps the matmuls. The setting is process-wide and read when TensorFlow loads, so every run with
it is a child process (the plain runs it is compared with are not)."""
import json
import os
import re
import subprocess
import sys

import pytest

from tf_records import DataOptions, PreparedData
from tiny import SYNTHETIC, SYNTHETIC_FLAGS, TRAIN_SIZES, train_flags
from txl_tf.commands.train import train
from txl_tf.commands.train_options import TrainOptions
from txl_tf.model.config_template import ConfigTemplate
from txl_tf.training import xla_clustering

pytestmark = pytest.mark.usefixtures("matmul_rate_once")  # conftest.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import os, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from txl_tf.training import xla_clustering
print("before", os.environ.get("TF_XLA_FLAGS", ""), flush=True)
xla_clustering.enable_elementwise_clustering()
import tensorflow as tf
a = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
b = np.ones([4, 5], np.float32)
f = tf.function(lambda a, b: tf.nn.softmax(tf.exp(tf.matmul(a, b)) * 2.0 + 1.0))
expected = np.exp(a @ b) * 2 + 1
expected = np.exp(expected - expected.max(-1, keepdims=True))
np.testing.assert_allclose(f(a, b).numpy(), expected / expected.sum(-1, keepdims=True), rtol=1e-5)
print("after", os.environ["TF_XLA_FLAGS"], flush=True)
"""


def test_missing_flags_keep_what_the_user_set():
    assert xla_clustering._missing_flags({}) == list(xla_clustering.CLUSTER_FLAGS)
    user = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=1 --tf_xla_min_cluster_size=2"}
    assert xla_clustering._missing_flags(user) == ["--tf_xla_cpu_global_jit",
                                                   "--tf_xla_ops_to_cluster=FUSIBLE"]
    assert xla_clustering._missing_flags(
        {"TF_XLA_FLAGS": " ".join(xla_clustering.CLUSTER_FLAGS)}) == []


def test_enabling_reexecutes_with_the_flags_and_clusters():
    env = {k: v for k, v in os.environ.items() if k != "TF_XLA_FLAGS"}
    env.update(TF_XLA_FLAGS="--tf_xla_min_cluster_size=2", TF_CPP_MIN_LOG_LEVEL="0")
    result = subprocess.run([sys.executable, "-c", CHILD, REPO], capture_output=True, text=True,
                            timeout=300, env=env, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    # First run without the flags, then (re-executed) with them, the user's flag kept.
    before = re.findall(r"^before (.*)$", result.stdout, re.M)
    assert before == ["--tf_xla_min_cluster_size=2",
                      "--tf_xla_min_cluster_size=2 " + " ".join(xla_clustering.CLUSTER_FLAGS)]
    assert "Compiled cluster using XLA" in result.stderr


# Wide enough dropout tensors (2 layers, d_inner 256, 4 x 32 tokens) once made Grappler's
# constant folding and the fusible clustering leave a graph with a cycle.
WIDE = dict(TRAIN_SIZES, d_model=64, d_head=8, d_inner=256, tgt_len=32, mem_len=32,
            dropout=0.1, dropatt=0.1)
# jit_compile false: the training step is left to the fusible clustering in the fused run (auto
# would compile it whole on CPU float32) and runs TensorFlow's kernels in the plain one.
RUN = dict(per_host_train_bsz=4, learning_rate=1e-2, warmup_steps=2, train_steps=4,
           steps_per_loop=1, log_steps=1, save_steps=4, eval_steps=0, max_eval_batches=2,
           jit_compile="false")


def _start_fused(tmp_path, data_dir, name):
    """`runners/train.py --xla_fusion` on the WIDE model started in a child process; returns
    it and a function that waits for it and returns its summary."""
    model_dir = tmp_path / name
    command = [sys.executable, os.path.join(REPO, "runners", "train.py"),
               f"--model_dir={model_dir}", f"--data_dir={data_dir}", "--dataset=synthetic",
               *[f"--{k}={v}" for k, v in RUN.items()], *train_flags(**WIDE),
               *SYNTHETIC_FLAGS, "--xla_fusion"]
    # The flags in its environment, as a user may set them: the process starts with them and is
    # not re-executed (TensorFlow loads once). The re-execution: test_enabling_reexecutes_with_
    # the_flags_and_clusters, and benchmark.py's run below (a runner started without them).
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO,
               TF_XLA_FLAGS=" ".join(xla_clustering.CLUSTER_FLAGS))
    log = tmp_path / f"{name}.stderr"  # a file, not a pipe: nothing waits for a reader
    with open(log, "wb") as err:
        process = subprocess.Popen(command, cwd=str(tmp_path), env=env,
                                   stdout=subprocess.DEVNULL, stderr=err)

    def summary():
        try:
            process.wait(timeout=600)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 0, log.read_text(errors="replace")[-3000:]
        with open(model_dir / "train_summary.json") as f:
            return json.load(f)
    return process, summary


def test_training_with_xla_fusion_follows_the_plain_run(tmp_path, synthetic_data_dir):
    """Same data, seed and dropout masks (the hashed masks do not depend on XLA): the fused run
    of `runners/train.py --xla_fusion` differs from the plain one (the same options through
    `train`, in this process, which has no XLA flags) only by float32 rounding; the WIDE model
    trains under the fusible clustering."""
    if os.environ.get("TF_XLA_FLAGS"):
        pytest.skip("TF_XLA_FLAGS is set in the test process: its plain run would be clustered")
    # The child starts (Python and TensorFlow) while this process trains the plain run; it
    # prepares the same corpus in a data directory of its own (two processes making the same
    # records in one directory would race).
    process, fused_summary = _start_fused(tmp_path, tmp_path / "fused-data", "fused")
    try:
        plain = train(TrainOptions(model_dir=str(tmp_path / "plain"), **RUN),
                      ConfigTemplate.of(**WIDE),
                      PreparedData(DataOptions(data_dir=synthetic_data_dir,
                                               dataset="synthetic", corpus_options=SYNTHETIC)))
    except BaseException:
        process.kill()
        process.wait()
        raise
    fused = fused_summary()
    assert fused["step"] == plain["step"] == RUN["train_steps"]
    assert fused["train_loss"] > 0
    assert fused["train_loss"] == pytest.approx(plain["train_loss"], rel=1e-4)
    assert fused["valid_loss"] == pytest.approx(plain["valid_loss"], rel=1e-4)


def test_benchmark_with_xla_fusion(tmp_path):
    """--jit_compile=auto leaves the mixed_bfloat16 step to the fusible clustering; true compiles
    it whole all the same. One layer without dropout: the record is what is checked (the WIDE
    training run above covers stacked layers and dropout under the clustering)."""
    base = [sys.executable, os.path.join(REPO, "runners", "tools", "benchmark.py"), "--n_token=30",
            *train_flags(n_layer=1, dropout=0.0), "--batch_size=2", "--steps=1", "--rounds=1", "--bench_warmup=1",
            "--matmul_size=64", "--nomeasure_memory", "--precision=mixed_bfloat16", "--xla_fusion"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_XLA_FLAGS", None)
    result = subprocess.run(base, capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = re.findall(r"^BENCHMARK_JSON (.*)$", result.stdout, re.M)
    record = json.loads(line)
    assert record["xla_fusion"] is True and record["jit_compile"] is False
    assert record["jit_compile_flag"] == "auto" and "--xla_fusion" in record["compilation"]
    assert record["peak_dtype"] == "bfloat16"
    assert record["train_tokens_per_s"] > 0 and record["eval_tokens_per_s"] > 0
