"""txl-tf against the Hugging Face TransfoXL peer on the NVIDIA WT103 base shape, on the same
device, timed interleaved round by round by the benchmark (`run_benchmark` of
`runners/tools/benchmarks/run.py` with `--compare_huggingface`; the peer is
`runners/tools/benchmark_huggingface.py` in --serve mode, started with this Python when it
imports `transformers` and `torch`).

The NVIDIA shape (docs/performance.md, "What to expect on a GPU"): the wt103_base recipe with
d_model 512, 8 heads of 64, d_inner 2048, tgt_len = mem_len = 192, 32 streams, the WT103
vocabulary and cutoffs. float32 runs against the peer in float32 (TF32 matmuls on a GPU, both),
mixed_bfloat16 against the peer under bfloat16 autocast.
"""
import importlib.util
import sys

from runners.tools.benchmarks.configuration import FLAGS
from runners.tools.benchmarks.run import run_benchmark

NVIDIA_SHAPE = dict(d_model=512, n_head=8, d_head=64, d_inner=2048, tgt_len=192, mem_len=192,
                    train_batch_size=32)
HF_PRECISION = {"float32": "float32", "mixed_bfloat16": "bfloat16"}
KEPT = ("train_tokens_per_s", "eval_tokens_per_s", "train_step_s", "eval_step_s",
        "train_speedup_vs_huggingface", "eval_speedup_vs_huggingface", "mfu_train",
        "matmul_peak_flops", "jit_compile", "compilation", "batch_size", "replicas")


def missing():
    """Why the peer cannot run in this Python (None when it can)."""
    absent = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if absent:
        return (f"{' and '.join(absent)} not importable in this Python (on the GPU kit: "
                "TXL_GPU_HF=1 before sourcing .gpu-kit/bin/activate.sh)")
    return None


def compare(precision, on_gpu, rounds, steps, warmup, matmul_size=0):
    """One interleaved comparison in `precision` on the flags set by `apply_recipe` (the NVIDIA
    shape); returns the benchmark's figures that the report keeps, and the peer's.

    Args:
      precision: float32 or mixed_bfloat16 (the peer: float32 or bfloat16 autocast).
      on_gpu: the peer on the GPU (cuda) rather than the CPU.
      rounds, steps, warmup: the benchmark's --rounds, --steps and --bench_warmup.
      matmul_size: the side of the benchmark's matmul rate (0: grown again each round).
    """
    FLAGS.strategy, FLAGS.devices = "one_device", []
    FLAGS.compare_huggingface, FLAGS.hf_python = True, sys.executable
    FLAGS.hf_precision, FLAGS.hf_device = HF_PRECISION[precision], "cuda" if on_gpu else "cpu"
    FLAGS.measure_memory, FLAGS.compare_vanilla, FLAGS.compare_compilation = False, False, False
    FLAGS.rounds, FLAGS.steps, FLAGS.bench_warmup = rounds, steps, warmup
    FLAGS.json_out, FLAGS.matmul_size = None, matmul_size
    record = run_benchmark()
    out = {key: record.get(key) for key in KEPT}
    hf = record["huggingface"]
    out["huggingface"] = {k: hf.get(k) for k in ("train_tokens_per_s", "eval_tokens_per_s",
                                                  "train_step_s", "eval_step_s", "precision",
                                                  "device", "torch", "transformers")}
    return out
