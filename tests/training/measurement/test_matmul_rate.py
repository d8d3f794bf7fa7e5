"""The matmul rate on a fake accelerator whose host copy is slow: the rate is the products', not
the copy's; the copy is a few bytes; the FLOPs and the growth of the problem against a fake
clock."""
import math
import time
import types

import pytest
import tensorflow as tf
from tensorflow.python.framework import ops

from txl_tf.training.measurement import matmul_rate


class SlowHostCopy:
    """A fake accelerator's device-to-host copy: fetching a tensor costs bytes / `bandwidth`
    seconds of the clock every timer reads (`time.perf_counter`), without sleeping."""

    def __init__(self, monkeypatch, bandwidth: float):
        self.bandwidth, self.delay, self.fetched = bandwidth, 0.0, []
        fetch, clock = ops._EagerTensorBase._numpy, time.perf_counter

        def slow_fetch(tensor):
            nbytes = tensor.shape.num_elements() * tensor.dtype.size
            self.fetched.append(nbytes)
            self.delay += nbytes / self.bandwidth
            return fetch(tensor)

        monkeypatch.setattr(ops._EagerTensorBase, "_numpy", slow_fetch)
        monkeypatch.setattr(time, "perf_counter", lambda: clock() + self.delay)


def test_a_slow_host_copy_does_not_lower_the_rate(monkeypatch):
    fast = matmul_rate.measure_matmul_rate(tf.float32, repeats=3)
    # 100 kB/s: copying one [1024, 1024] float32 product would cost 40 s a product, a rate
    # of 0.05 GFLOP/s; a scalar costs 40 microseconds.
    copy = SlowHostCopy(monkeypatch, bandwidth=1e5)
    slow = matmul_rate.measure_matmul_rate(tf.float32, repeats=3)
    assert copy.fetched and max(copy.fetched) <= tf.float32.size  # scalars only
    assert slow.flops_per_second > fast.flops_per_second / 10, (slow, fast)


def test_the_rate_is_in_the_asked_dtype_on_the_asked_device(monkeypatch, two_cpu_devices):
    seen = []
    original = matmul_rate._operands

    def spy(size, dtype):
        a, b = original(size, dtype)
        seen.extend((t.dtype, t.device, t.shape) for t in (a, b))
        return a, b

    monkeypatch.setattr(matmul_rate, "_operands", spy)
    rate = matmul_rate.measure_matmul_rate(tf.bfloat16, device=two_cpu_devices[1], size=64,
                                           repeats=1)
    assert rate.dtype == "bfloat16" and rate.device == two_cpu_devices[1] and rate.size == 64
    assert len(seen) == 4  # two operands, plain and XLA
    assert all(s[0] == tf.bfloat16 and s[1].endswith("CPU:1") and s[2] == [64, 64]
               for s in seen), seen


class FakeClock:
    """`time` of the module: each reading is `tick` seconds after the last."""

    def __init__(self, tick):
        self.now, self.tick = 0.0, tick

    def perf_counter(self):
        self.now += self.tick
        return self.now


def test_flops_over_seconds_against_a_fake_clock(monkeypatch):
    monkeypatch.setattr(matmul_rate, "START_SIZE", 32)
    monkeypatch.setattr(matmul_rate, "MAX_SIZE", 64)
    tick = 2.0 ** -6  # exact in binary: the clock's differences are exact
    monkeypatch.setattr(matmul_rate, "time", FakeClock(tick))
    rate = matmul_rate.measure_matmul_rate(tf.float32, repeats=2)
    # Every burst "lasts" one tick (15.6 ms >= MIN_PRODUCT_SECONDS): no growth; a burst has
    # the products that one product's time puts in MIN_BURST_SECONDS.
    products = math.ceil(matmul_rate.MIN_BURST_SECONDS / tick)
    assert (rate.size, rate.products) == (32, products)
    assert rate.flops_per_second == pytest.approx(2 * 32 ** 3 * products / tick)


def test_a_fast_product_grows_the_problem_to_the_largest_side(monkeypatch):
    monkeypatch.setattr(matmul_rate, "START_SIZE", 16)
    monkeypatch.setattr(matmul_rate, "MAX_SIZE", 128)
    monkeypatch.setattr(matmul_rate, "time", FakeClock(tick=1e-6))  # an accelerator's pace
    rate = matmul_rate.measure_matmul_rate(tf.float32, repeats=1)
    assert rate.size == 128 and rate.products == matmul_rate.MAX_BURST


def test_a_given_size_is_kept(monkeypatch):
    monkeypatch.setattr(matmul_rate, "MAX_SIZE", 64)
    monkeypatch.setattr(matmul_rate, "time", FakeClock(tick=1e-6))
    assert matmul_rate.measure_matmul_rate(tf.float32, size=48, repeats=1).size == 48


def test_both_compilations_are_timed_and_the_better_counts(monkeypatch):
    clock = types.SimpleNamespace(now=0.0)
    jit_of_burst = []

    def perf_counter():  # XLA's bursts last half as long as plain TensorFlow's
        clock.now += 2.0 ** -8 if jit_of_burst and jit_of_burst[-1] else 2.0 ** -7
        return clock.now

    original = tf.function

    def recording_function(fn, jit_compile=None):
        compiled = original(fn, jit_compile=jit_compile)

        def call(a, b):
            jit_of_burst.append(jit_compile)
            return compiled(a, b)
        return call

    monkeypatch.setattr(matmul_rate, "START_SIZE", 32)
    monkeypatch.setattr(matmul_rate, "MAX_SIZE", 64)
    monkeypatch.setattr(matmul_rate, "MIN_PRODUCT_SECONDS", 2.0 ** -9)  # no growth
    monkeypatch.setattr(matmul_rate, "time", types.SimpleNamespace(perf_counter=perf_counter))
    monkeypatch.setattr(matmul_rate.tf, "function", recording_function)
    rate = matmul_rate.measure_matmul_rate(tf.float32, repeats=1)
    assert set(jit_of_burst) == {False, True}
    assert rate.size == 32
    assert rate.flops_per_second == pytest.approx(2 * 32 ** 3 * rate.products / 2.0 ** -8)
