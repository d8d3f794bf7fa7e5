"""PyTorch's matmul rate on one device, the accelerator report's cross-check, run as a child
process of its own by `rates.torch_rates`: PyTorch and TensorFlow each bring a CUDA stack, and
the two in one process died with a floating point exception at PyTorch's first product on a GPU.
This file imports no TensorFlow and nothing of txl-tf.

  python torch_rate.py '{"float32": 8192, "mixed_bfloat16": 8192}' cuda 8
prints one JSON line: {precision: {"flops_per_second", "size", "device", "dtype", "torch"}}.
Square products of each side, timed in bursts of `products` between two synchronisations (the
best of three); float32 with TF32 allowed on a GPU, as TensorFlow's float32 matmuls there.
"""
import json
import sys
import time

DTYPES = {"float32": "float32", "mixed_bfloat16": "bfloat16"}


def rates(sizes, device, products):
    """{precision: figures} of `sizes` ({precision: side}) on `device` ("cuda" or "cpu")."""
    import torch
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    out = {}
    for precision, side in sizes.items():
        dtype = getattr(torch, DTYPES[precision])
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
                          "dtype": DTYPES[precision], "torch": torch.__version__}
    return out


if __name__ == "__main__":
    sizes, wanted, count = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    import torch
    where = "cuda" if wanted == "cuda" and torch.cuda.is_available() else "cpu"
    print(json.dumps(rates(sizes, where, count)))
