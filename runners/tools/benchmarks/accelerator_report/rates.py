"""The matmul rate of the report's device: TensorFlow's (the one rate of
`txl_tf/training/measurement/matmul_rate.py`, through the benchmark's `peak.best_rate`) in float32 and
bfloat16, and PyTorch's on the same device as the cross-check where `import torch` works.

PyTorch's products are square, of the side TensorFlow's rate grew to, timed in a child process
(`torch_rate.py`).
"""
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys

from runners.tools.benchmarks import peak as peaks

PRECISIONS = ("float32", "mixed_bfloat16")
TORCH_RATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_rate.py")


def tensorflow_rates(device, devices, size=None):
    """{precision: `MatmulRate`} of float32 and of mixed_bfloat16's bfloat16 products.

    Args:
      device: the device timed (the runs' first device).
      devices: every device of the runs (their allocator peaks start afresh after it).
      size: the matrices' side; None: grown (see matmul_rate.py).
    """
    return {p: peaks.best_rate(None, peaks.precision_dtype(p), device, devices, size)
            for p in PRECISIONS}


def torch_rates(sizes, on_gpu, products=8, timeout=120):
    """{precision: {"flops_per_second", "size", "device", "dtype", "torch"}} of PyTorch's
    products of the sides TensorFlow used, measured in a child process (`torch_rate.py`: the
    two frameworks' CUDA stacks do not share one process); None when torch does not import.

    Raises:
      RuntimeError: the child failed or gave no figures (one line, with its last words).
    """
    if importlib.util.find_spec("torch") is None:
        return None
    args = [sys.executable, TORCH_RATE, json.dumps({p: sizes[p] for p in PRECISIONS}),
            "cuda" if on_gpu else "cpu", str(products)]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"PyTorch's products took over {timeout} s")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        said = [line for line in proc.stderr.splitlines() if line.strip()][-1:]
        raise RuntimeError(f"PyTorch's child exited with {proc.returncode}"
                           f"{': ' + said[0][:200] if said else ''}")
    return json.loads(lines[-1])


def as_record(rates):
    """The `MatmulRate`s as JSON-ready dicts."""
    return {p: dataclasses.asdict(r) for p, r in rates.items()}

