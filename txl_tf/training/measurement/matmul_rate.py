"""The matrix-product rate of one device: the peak against which a step's FLOPs are judged.

One measurement serves every figure that needs the rate (the duration estimate of a training
run, the benchmark's model FLOPs utilisation): square products C = A B of side `size` in the
run's compute dtype, on the device the run uses, plain TensorFlow and compiled by XLA, the
best burst counting.

How it stays honest on an accelerator, where kernels run asynchronously:
  * each product returns only a scalar, the largest entry of C (a maximum needs every entry,
    and no algebraic rewrite moves it inside the product, so nothing can be pruned; it costs
    O(size^2) against the product's 2 size^3), and a burst of products is waited for by
    fetching one scalar, the sum of theirs: the host copy is a few bytes, never the
    [size, size] product;
  * the side grows (doubling from `START_SIZE`, up to `MAX_SIZE`) until one product lasts
    `MIN_PRODUCT_SECONDS`, so that an accelerator is not timed on a problem too small to fill
    it, and a burst repeats the product until it lasts `MIN_BURST_SECONDS`.
On a CPU a product of side 1024 or 2048 already lasts that long (the sides the earlier timers
used), timed one or a few at a time; an accelerator reaches `MAX_SIZE`.

Example:
  >>> rate = measure_matmul_rate(tf.bfloat16, device="/GPU:0")
  >>> rate.flops_per_second, rate.size
"""
import dataclasses
import math
import time
from typing import Optional

import tensorflow as tf

START_SIZE = 1024
MAX_SIZE = 8192  # three float32 [8192, 8192] matrices: 768 MiB
MIN_PRODUCT_SECONDS = 0.01
MIN_BURST_SECONDS = 0.05
MAX_BURST = 64


@dataclasses.dataclass
class MatmulRate:
    """A measured rate.

    Attributes:
      flops_per_second: the best burst's 2 size^3 x products / seconds.
      size: the side of the square matrices.
      dtype: their dtype's name ('float32', 'bfloat16', ...).
      device: the device they ran on ('' for TensorFlow's default placement).
      products: the products of one timed burst.
    """
    flops_per_second: float
    size: int
    dtype: str
    device: str
    products: int


def _max_of_product(a, b):
    """The largest entry of a @ b: a scalar whose value needs the whole product."""
    return tf.reduce_max(tf.linalg.matmul(a, b))


def _operands(size: int, dtype):
    a = tf.cast(tf.random.normal([size, size], seed=1), dtype)
    b = tf.cast(tf.random.normal([size, size], seed=2), dtype)
    return a, b


def _burst_seconds(product, a, b, products: int) -> float:
    """Wall seconds of `products` products dispatched back to back and waited for by fetching
    one scalar."""
    start = time.perf_counter()
    sums = [product(a, b) for _ in range(products)]
    (sums[0] if products == 1 else tf.add_n(sums)).numpy()
    return time.perf_counter() - start


def _grown_size(product, dtype, size: Optional[int]):
    """(side, operands, seconds of one product): `size` when given, else the first side from
    `START_SIZE` (doubling) whose product lasts `MIN_PRODUCT_SECONDS`, at most `MAX_SIZE`."""
    side = size or START_SIZE
    while True:
        a, b = _operands(side, dtype)
        product(a, b).numpy()  # tracing and the kernels' first use
        seconds = min(_burst_seconds(product, a, b, 1) for _ in range(2))
        if size or seconds >= MIN_PRODUCT_SECONDS or side * 2 > MAX_SIZE:
            return side, (a, b), seconds
        side *= 2


def measure_matmul_rate(dtype=tf.float32, device: Optional[str] = None,
                        size: Optional[int] = None, repeats: int = 5) -> MatmulRate:
    """The best FLOP/s of square matrix products on `device` (see the module docstring).

    Args:
      dtype: the run's compute dtype (bfloat16 for mixed_bfloat16, float16 for mixed_float16).
      device: e.g. '/GPU:0' or a strategy's first device; None: TensorFlow's default placement.
      size: the matrices' side; None: grown until a product lasts long enough.
      repeats: timed bursts per compilation (plain TensorFlow, XLA), after an untimed product.

    Returns:
      The `MatmulRate`.
    """
    best = None
    with tf.device(device):
        for jit in (False, True):
            product = tf.function(_max_of_product, jit_compile=jit)
            side, (a, b), one = _grown_size(product, tf.as_dtype(dtype), size)
            products = min(MAX_BURST, max(1, math.ceil(MIN_BURST_SECONDS / max(one, 1e-9))))
            seconds = min(_burst_seconds(product, a, b, products) for _ in range(repeats))
            rate = 2.0 * side ** 3 * products / max(seconds, 1e-9)
            if best is None or rate > best.flops_per_second:
                best = MatmulRate(rate, side, tf.as_dtype(dtype).name, device or "", products)
    return best
