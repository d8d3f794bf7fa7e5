"""The accelerators' peak memory with a fake `get_memory_info` (a CPU has none: None and the
reason, not TensorFlow's 0), and the accumulation chooser's estimate recorded beside it."""
import pytest
import tensorflow as tf

from txl_tf import TransformerXLConfig
from txl_tf.model.memory_estimate import approx_parameters, training_bytes_per_stream
from txl_tf.training import batch_fit
from txl_tf.training.measurement import device_memory

GPUS = ["/job:localhost/replica:0/task:0/device:GPU:0", "/GPU:1"]


def test_the_largest_peak_of_the_accelerators():
    info = {GPUS[0]: {"current": 1, "peak": 5 * 2**30}, GPUS[1]: {"current": 2, "peak": 7 * 2**30}}
    peak = device_memory.peak_memory(GPUS, memory_info=info.__getitem__)
    assert peak == {"peak_bytes": 7 * 2**30, "devices": {GPUS[0]: 5 * 2**30, GPUS[1]: 7 * 2**30},
                    "reason": None}


def test_a_cpu_has_no_peak_and_says_why():
    # On a CPU TensorFlow counts its tensor allocator (0 before the first tensor): not the
    # process's memory, so no figure is reported.
    tensor = tf.ones([256, 1024])
    counted = tf.config.experimental.get_memory_info("CPU:0")["peak"]
    assert counted >= tensor.shape.num_elements() * 4
    peak = device_memory.peak_memory(["/CPU:0"])
    assert peak["peak_bytes"] is None and peak["devices"] == {"/CPU:0": None}
    assert peak["reason"] == device_memory.CPU_REASON


def test_a_failing_query_gives_none_and_names_the_device():
    def memory_info(device):
        raise ValueError(f"No matching devices found for '{device}'")

    peak = device_memory.peak_memory(["/GPU:3"], memory_info=memory_info)
    assert peak["peak_bytes"] is None
    assert peak["reason"].startswith("get_memory_info('/GPU:3') failed: No matching devices")
    one_known = device_memory.peak_memory(
        ["/GPU:3", "/GPU:0"], memory_info=lambda d: {"peak": 9} if d == "/GPU:0" else {})
    assert one_known["peak_bytes"] == 9 and one_known["devices"]["/GPU:3"] is None


def test_reset_only_where_tensorflow_tracks_the_peak():
    reset = []

    def fake_reset(device):
        if device == "/GPU:1":
            raise ValueError("not supported")
        reset.append(device)

    device_memory.reset_peaks(["/CPU:0", "/GPU:0", "/GPU:1"], reset=fake_reset)
    assert reset == ["/GPU:0"]
    device_memory.reset_peaks(["/CPU:0"])  # the real one: nothing to reset on a CPU


@pytest.fixture
def config():
    return TransformerXLConfig(n_token=256, n_layer=2, d_model=32, n_head=2, d_head=16,
                               d_inner=64, tgt_len=16, mem_len=16)


def test_the_chooser_records_its_estimate(config):
    fit = batch_fit.fit_per_replica_batch(config, per_replica=8, given=1,
                                          max_per_replica_batch=2, strategy=None,
                                          local_replicas=1)
    assert (fit.grad_accum_steps, fit.chunk) == (4, 2)
    est = fit.estimate
    assert est["streams_per_chunk"] == 2 and est["device"] == "not queried"
    assert est["activation_bytes_per_stream"] == training_bytes_per_stream(config)
    assert est["estimated_peak_bytes"] == (2 * training_bytes_per_stream(config)
                                           + 16 * approx_parameters(config))
    assert est["device_memory_bytes"] is None


def test_the_estimate_from_the_device_memory_is_recorded(config, monkeypatch):
    per_stream = training_bytes_per_stream(config)
    weights = 16 * approx_parameters(config)
    memory = int((3 * per_stream + weights) / batch_fit.ACTIVATION_SHARE) + 1  # 3 streams fit
    monkeypatch.setattr(batch_fit, "device_memory_bytes", lambda strategy, n: (memory, "GPU"))
    fit = batch_fit.fit_per_replica_batch(config, 12, 1, 0, None, 1)
    assert (fit.grad_accum_steps, fit.chunk) == (4, 3)
    assert fit.estimate["device_memory_bytes"] == memory and fit.estimate["device"] == "GPU"
    assert fit.estimate["estimated_peak_bytes"] == 3 * per_stream + weights
