"""Shared pytest set-up for txl-tf.

TensorFlow is configured once, before any test touches it:
  * two logical CPU devices, so that MirroredStrategy tests have two replicas on this
    2-core machine (``/CPU:0`` and ``/CPU:1``);
  * quiet C++ logging, and none of the lines TensorFlow prints as it loads
    (`runners.cli.startup.quiet_start`);
  * a fresh collective-key range for every MirroredStrategy: TensorFlow caches each all-reduce's
    (group, instance) key with its shape for the whole process, and every new MirroredStrategy
    starts from the same keys, so a strategy reducing tensors of other shapes in a later test
    would fail with "Shape mismatch in the collective instance".
Tests that need a multi-replica strategy use the ``two_cpu_devices`` fixture; tests that need
a prepared data directory the ``synthetic_data_dir`` fixture (tests/support/tiny.py has the
tiny model and data settings); tests that read a model trained by runners/train.py the
``trained_byte_model`` fixture, and tests that read a tiny word-level model's SavedModels the
``word_export`` fixture (each made once per run for both xdist workers, read-only;
tests/support/shared_dirs.py).
"""
import itertools
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from runners.cli.startup import quiet_start  # noqa: E402

quiet_start()  # without it, the lines TensorFlow's C++ libraries print as they load end the output

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import hypothesis_profiles  # noqa: E402  (tests/support: the ci / long profiles)

hypothesis_profiles.load()

_cpus = tf.config.list_physical_devices("CPU")
try:
    tf.config.set_logical_device_configuration(
        _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )
except RuntimeError:  # TensorFlow was initialised already (e.g. by a plugin).
    pass


def pytest_collection_modifyitems(config, items):
    """In an xdist worker: records the modules whose tests share a module-, class- or
    package-scoped fixture, for the controller's scheduler (tests/support/worker_groups.py)."""
    import worker_groups

    worker_groups.on_collection(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With `-n`: each module whose tests share a wider fixture runs on one worker, every other
    test is a unit of its own (tests/support/worker_groups.py)."""
    import worker_groups

    return worker_groups.make_scheduler(config, log)


@pytest.fixture
def two_cpu_devices():
    """The names of two logical CPU devices, e.g. for ``tf.distribute.MirroredStrategy``."""
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert len(devices) >= 2, f"expected two logical CPUs, got {devices}"
    return devices[:2]


@pytest.fixture(scope="session")
def synthetic_data_dir(tmp_path_factory):
    """A data directory holding the ``tiny.SYNTHETIC`` corpus (vocabulary, corpus info, token
    caches), prepared once per session. Tests may add records of their own layouts to it (as
    training does), never change or remove what is there."""
    import tiny

    return tiny.prepare_synthetic(tmp_path_factory.mktemp("synthetic") / "data")


@pytest.fixture(scope="session")
def trained_byte_model(tmp_path_factory):
    """{"model": path, "data": path}: a byte-level model directory trained 4 steps by
    runners/train.py on the builtin text (checkpoints ckpt-2, ckpt-4 and best/;
    `causal_lm_support.trained_model_dir`) and its data directory, made once per run and shared
    read-only by every test and both xdist workers. A test that changes them works on
    `shared_dirs.writable_copy`; one that changed them anyway fails this fixture's teardown."""
    from causal_lm_support import trained_model_dir
    from shared_dirs import read_only_dir

    with read_only_dir(tmp_path_factory, "trained_byte_model", trained_model_dir) as path:
        yield {"model": os.path.join(path, "model"), "data": os.path.join(path, "data")}


@pytest.fixture(scope="session")
def word_export(tmp_path_factory):
    """{"model", "full", "ids": paths, "info": what runners/export.py printed, "stderr": what it
    wrote there}: a tiny word-level model directory and its SavedModels (all signatures, by
    runners/export.py; id signatures only, in-process), made once per run and shared read-only
    by both xdist workers (tests/support/word_export.py). A test that writes files writes them
    elsewhere."""
    import json

    from shared_dirs import read_only_dir
    from word_export import build

    with read_only_dir(tmp_path_factory, "word_export", build) as path:
        with open(os.path.join(path, "runner.json")) as f:
            info = json.load(f)
        with open(os.path.join(path, "runner.stderr")) as f:
            stderr = f.read()
        yield {"model": os.path.join(path, "model"), "full": info["export_path"],
               "ids": os.path.join(path, "ids", "1"), "info": info, "stderr": stderr}


_MATMUL_RATES = {}


@pytest.fixture(scope="module")
def matmul_rate_once():
    """For a module's tests: a training run in this process (`txl_tf.training.announce`)
    measures the matmul rate of its duration estimate once per (dtype, device) in the session
    and then reuses it, instead of about half a CPU second of matrix products per run. The
    measurement itself: tests/training/measurement/test_matmul_rate.py. Opt in with
    `pytestmark = pytest.mark.usefixtures("matmul_rate_once")`."""
    from txl_tf.training import announce

    measure = announce.measure_matmul_rate

    def measured_once(dtype=tf.float32, device=None, **kwargs):
        key = (tf.as_dtype(dtype).name, device, tuple(sorted(kwargs.items())))
        if key not in _MATMUL_RATES:
            _MATMUL_RATES[key] = measure(dtype, device, **kwargs)
        return _MATMUL_RATES[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(announce, "measure_matmul_rate", measured_once)
        yield


@pytest.fixture
def gc_frozen():
    """For a test: the objects that exist when it starts (TensorFlow's, Keras', the earlier
    tests') are moved to the collector's permanent generation (`gc.freeze`) until it ends
    (`gc.unfreeze`), so that a `gc.collect()` scans only what the test made. Keras'
    `Layer.__delattr__` runs `gc.collect()` for every weight `quantize("int8")` replaces (a scan
    of the test process's whole heap each, most of a quantization's time). Nothing is collected
    less: the frozen objects are scanned again once the test ends. Opt in with
    `pytestmark = pytest.mark.usefixtures("gc_frozen")`."""
    import gc

    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


_COLLECTIVE_KEY_RANGES = itertools.count(1)
_mirrored_strategy_init = tf.distribute.MirroredStrategy.__init__


def _init_with_own_collective_keys(self, *args, **kwargs):
    """Every MirroredStrategy made in the test process (in a test or in a fixture of any scope)
    gets collective instance keys no other strategy uses."""
    tf.distribute.MirroredStrategy._collective_key_base = 100_000 * next(_COLLECTIVE_KEY_RANGES)
    _mirrored_strategy_init(self, *args, **kwargs)


tf.distribute.MirroredStrategy.__init__ = _init_with_own_collective_keys
