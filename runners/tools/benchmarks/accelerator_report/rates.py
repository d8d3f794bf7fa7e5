"""The matmul rate of the report's device: TensorFlow's (the one rate of
`txl_tf/training/measurement/matmul_rate.py`, through the benchmark's `peak.best_rate`) in float32 and
bfloat16, and PyTorch's on the same device as the cross-check where `import torch` works.

PyTorch's products are square, of the side TensorFlow's rate grew to, timed in bursts between
two synchronisations (the best of three); float32 with TF32 allowed on a GPU, as TensorFlow's
float32 matmuls there.
"""
import dataclasses
import importlib.util
import time

from runners.tools.benchmarks import peak as peaks

PRECISIONS = ("float32", "mixed_bfloat16")


def tensorflow_rates(device, devices, size=None):
    """{precision: `MatmulRate`} of float32 and of mixed_bfloat16's bfloat16 products.

    Args:
      device: the device timed (the runs' first device).
      devices: every device of the runs (their allocator peaks start afresh after it).
      size: the matrices' side; None: grown (see matmul_rate.py).
    """
    return {p: peaks.best_rate(None, peaks.precision_dtype(p), device, devices, size)
            for p in PRECISIONS}


def torch_rates(sizes, on_gpu, products=8):
    """{precision: {"flops_per_second", "size", "device", "dtype"}} of PyTorch's products of
    the sides TensorFlow used, or None when torch does not import."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch  # optional: the cross-check only
    device = "cuda" if on_gpu and torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    out = {}
    for precision, dtype in (("float32", torch.float32), ("mixed_bfloat16", torch.bfloat16)):
        side = sizes[precision]
        a = torch.randn(side, side, device=device).to(dtype)
        b = torch.randn_like(a)
        best = 0.0
        for _ in range(3):
            sync()
            start = time.perf_counter()
            for _ in range(products):
                a @ b
            sync()
            best = max(best, 2.0 * side ** 3 * products / (time.perf_counter() - start))
        out[precision] = {"flops_per_second": best, "size": side, "device": device,
                          "dtype": str(dtype).replace("torch.", ""), "torch": torch.__version__}
    return out


def as_record(rates):
    """The `MatmulRate`s as JSON-ready dicts."""
    return {p: dataclasses.asdict(r) for p, r in rates.items()}

