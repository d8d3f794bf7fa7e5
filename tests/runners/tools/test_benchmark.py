"""Benchmark runner: it runs on a tiny configuration and reports every figure; its FLOPs count
matches the matrix products in the model's own graph. No timing assertions.

The training benchmark runs in this process (`run_benchmark` after its flags are parsed, as
`runners/tools/benchmark.py` runs it; its memory children are processes of their own); the
process as a user starts it: `test_xla_fusion.py::test_benchmark_with_xla_fusion`."""
import json
import math
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import tensorflow as tf

from runners.tools.benchmarks.accelerator_report.recipes import FlagState
from runners.tools.benchmarks.configuration import FLAGS
from runners.tools.benchmarks.run import run_benchmark

import txl_tf
from txl_tf.model import flops as model_flops
from tiny import tiny_config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# One layer without dropout: the figures, the strategy, the compilation mode and the profile do
# not depend on the stacking of layers (FLOPs of several layers:
# test_forward_flops_match_the_model_graph) nor on dropout, which only makes the traced and
# compiled steps larger.
TINY_FLAGS = ["--n_token=30", "--n_layer=1", "--d_model=16", "--n_head=2", "--d_head=8",
              "--d_inner=32", "--tgt_len=8", "--mem_len=8", "--dropout=0", "--steps=1",
              "--bench_warmup=1", "--matmul_size=64"]


def benchmark(args, capsys):
    """`runners/tools/benchmark.py` with `args` run in this process: (its BENCHMARK_JSON record,
    what it printed). The flags and Keras's dtype policy are put back afterwards."""
    state = FlagState()
    try:
        FLAGS(["benchmark", *args])
        run_benchmark()
    finally:
        state.restore()
    printed = capsys.readouterr().out
    lines = re.findall(r"^BENCHMARK_JSON (.*)$", printed, re.M)
    assert len(lines) == 1, printed[-3000:]
    return json.loads(lines[0]), printed


def _graph_matmul_flops(graph):
    """2 x multiply-adds of every contraction in a graph, read from the ops' static shapes."""
    total = 0.0
    for op in graph.get_operations():
        if op.type == "Einsum":
            equation = op.get_attr("equation").decode()
            inputs, output = equation.split("->")
            sizes = {}
            for spec, tensor in zip(inputs.split(","), op.inputs):
                for label, size in zip(spec, tensor.shape.as_list()):
                    sizes[label] = size
            if set(inputs.replace(",", "")) == set(output):
                continue  # no contracted index: an outer product, not a matmul
            total += 2.0 * math.prod(sizes.values())
        elif op.type in ("MatMul", "BatchMatMulV2", "BatchMatMulV3"):
            a, b = (t.shape.as_list() for t in op.inputs)
            ta = op.get_attr("transpose_a") if op.type == "MatMul" else op.get_attr("adj_x")
            tb = op.get_attr("transpose_b") if op.type == "MatMul" else op.get_attr("adj_y")
            m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
            n = b[-2] if tb else b[-1]
            out = op.outputs[0].shape.as_list()
            total += 2.0 * math.prod(out[:-2]) * m * n * k
    return total


@pytest.mark.parametrize("attn_type,d_embed,mem_len", [
    (0, 16, 5), (0, 8, 5), (0, 16, 0), (1, 16, 5), (1, 16, 0), (2, 16, 0), (2, 16, 5),
    (3, 16, 5), (3, 16, 0)])
def test_forward_flops_match_the_model_graph(attn_type, d_embed, mem_len):
    config = tiny_config(n_token=40, d_head=4, d_inner=24, d_embed=d_embed,
                         mem_len=mem_len, attn_type=attn_type)
    model = txl_tf.TransformerXL(config)
    b, q, m = 3, 6, config.mem_len
    mems = model.init_mems(b) or None

    @tf.function
    def forward(tokens, mems):
        return model(tokens, mems=mems, labels=tokens, training=False)["nll"]

    tokens = tf.zeros([b, q], tf.int32)
    graph = forward.get_concrete_function(tokens, mems).graph
    counted = _graph_matmul_flops(graph)
    total, _ = model_flops.forward_flops(config, b, q, m)
    assert counted == pytest.approx(total, rel=1e-9)
    assert model_flops.forward_flops_per_token(config, b, q, m) == pytest.approx(
        total / (b * q))
    train = model_flops.train_flops_per_token(config, b, q, m)
    assert 2.0 * total / (b * q) < train <= 3.0 * total / (b * q)


def test_benchmark_runs_on_a_tiny_config_and_reports_every_figure(tmp_path, capsys):
    """Every figure of one run (without XLA: the compiled step is what the mirrored test below
    checks; the memory child takes the same --jit_compile)."""
    out = tmp_path / "bench.json"
    record, printed = benchmark(
        [*TINY_FLAGS, "--jit_compile=false", "--batch_size=2", "--rounds=1",
         "--memory_mem_lens=8",
         "--compare_vanilla", "--vanilla_lens=8", "--vanilla_predictions=1",
         f"--json_out={out}"], capsys)
    assert json.loads(out.read_text()) == record
    for key in ("train_tokens_per_s", "eval_tokens_per_s", "train_step_s", "eval_step_s",
                "peak_rss_mb", "train_flops_per_token", "eval_flops_per_token",
                "matmul_peak_flops", "mfu_train", "mfu_eval"):
        assert isinstance(record[key], float) and record[key] > 0, key
    assert record["mfu_train"] == pytest.approx(
        record["train_flops_per_token"] * record["train_tokens_per_s"]
        / record["matmul_peak_flops"])
    # The matmul rate of the run's first device, at the asked side; no accelerator peak on a
    # CPU (None and the reason), the accumulation chooser's estimate of this step beside it.
    assert record["matmul_size"] == 64 and record["matmul_device"].endswith("CPU:0")
    assert record["accelerator_peak_memory_mb"] is None
    assert record["device_memory"]["reason"].startswith("a CPU's get_memory_info counts")
    estimate = record["device_memory"]["estimate"]
    assert estimate["streams_per_chunk"] == 2
    assert record["estimated_peak_memory_mb"] == pytest.approx(
        estimate["estimated_peak_bytes"] / 2**20)
    assert [m["mem_len"] for m in record["memory"]] == [8]  # one child: its figures
    for m in record["memory"]:  # the child's own figures, in the order they grow
        assert 0 < m["rss_after_import_mb"] <= m["peak_rss_after_build_mb"]
        assert m["peak_rss_after_build_mb"] <= m["process_peak_rss_mb"]
        assert m["steady_step_peak_rss_mb"] <= m["process_peak_rss_mb"]
    (row,) = record["vanilla"]
    assert row["attn_len"] == 8 and row["slowdown"] > 0
    for key in ("tensorflow", "keras", "cpu", "cores"):
        assert key in record["machine"]
    assert "train tokens/s" in printed and "MFU train" in printed


def test_benchmark_times_train_pys_step_on_two_replicas_and_profiles(tmp_path, capsys,
                                                                      two_cpu_devices):
    """The benchmark takes train.py's --strategy and --jit_compile (auto: the step compiled as
    train.py compiles it under two mirrored CPUs), prints tokens/s per replica, and
    --profile_steps writes a profile to --model_dir as train.py does. In this process, which
    has two logical CPUs."""
    args = [*TINY_FLAGS, "--batch_size=4", "--rounds=2", "--nomeasure_memory",
            "--strategy=mirrored", f"--devices={','.join(two_cpu_devices)}",
            "--compare_compilation", "--profile_steps=2,3", f"--model_dir={tmp_path}"]
    record, printed = benchmark(args, capsys)
    assert record["replicas"] == 2 and record["jit_compile"] is True
    assert record["xla_mode"] == "gradients" and record["jit_compile_flag"] == "auto"
    assert record["train_tokens_per_s_per_replica"] == pytest.approx(
        record["train_tokens_per_s"] / 2)
    assert "train tokens/s/replica (x2)" in printed
    other = record["other_compilation"]  # the step without XLA, timed in the same rounds
    assert other["jit_compile"] is False and len(other["train_step_s_all"]) == 2
    assert "train tokens/s, jit off" in printed
    assert len(list(tmp_path.glob("plugins/profile/*/*.xplane.pb"))) == 1


def test_benchmark_process_makes_two_cpus_and_refuses_a_profile_past_its_steps():
    """The process a user starts makes two logical CPUs with --logical_cpus=2 (TensorFlow's
    devices are set before its first use, so only a new process shows it) and refuses a
    profile range past the run's steps in one line with exit status 2, after the mirrored
    strategy over its two CPUs and the model are built."""
    command = [sys.executable, os.path.join(REPO, "runners", "tools", "benchmark.py"),
               *TINY_FLAGS, "--batch_size=4", "--rounds=2", "--nomeasure_memory",
               "--strategy=mirrored", "--logical_cpus=2", "--devices=/CPU:0,/CPU:1",
               "--compare_compilation", "--profile_steps=2,9"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    refusing = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env,
                              timeout=600)
    assert refusing.returncode == 2, refusing.stderr[-3000:]
    assert "--profile_steps=2,9 is not START,END" in refusing.stderr
    assert "Traceback" not in refusing.stderr


def test_benchmark_inference_reports_graph_loop_against_compiled(monkeypatch, capsys):
    """benchmark_inference.py's compiled and serving sections on a tiny model: every figure of
    both ways, and the same tokens (graph loop and XLA program; both SavedModels). Its `main`
    in this process with these values of its flags (the program's flags and their ranges:
    tests/runners/test_flag_ranges_runners.py, which starts it as a process)."""
    from runners.tools.benchmarks import inference_speed
    monkeypatch.setattr(inference_speed, "FLAGS", SimpleNamespace(
        sections=["compiled", "serving"], batches=["2"], prompt_lens=["3"], gen_tokens=3,
        gen_mem_len=6, n_layer=1, d_model=16, n_head=2, d_inner=32, n_token=20, eval_tgt_len=4,
        eval_mem_len=6, repeats=1))
    inference_speed.main([])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    run = out["compiled"]["runs"][0]
    assert (run["batch"], run["prompt_len"], run["same_tokens"]) == (2, 3, True)
    for way in ("graph_loop", "compiled"):
        assert run[way]["tokens_per_second"] > 0 and run[way]["first_token_seconds"] > 0
        served = out["serving"][way][0]
        assert served["same_tokens"] and served["generate_seconds"] > 0
        assert served["score_seconds"] > 0
    assert out["device"] == "CPU"
