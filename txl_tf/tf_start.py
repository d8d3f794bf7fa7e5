"""A quiet start-up: TensorFlow imported without the lines its C++ libraries print as they load.

`import txl_tf` calls `quiet_when_imported`, which loads nothing: whoever imports TensorFlow
first afterwards (the user's `import tensorflow`, Keras, or a txl_tf module) gets it loaded by
`quiet_start`. That sets `TF_CPP_MIN_LOG_LEVEL=2` unless the user set it, and drops the lines
TensorFlow's C++ libraries print while they load, whatever that variable says (`=0` shows them
all: it is how a user asks for TensorFlow's own start-up log) ("All log messages before
absl::InitializeLog()", oneDNN, "Could not find cuda drivers", the `cuInit` error of a machine
without GPU); every other line printed meanwhile is passed on. With TensorFlow 2.21 on a CPU
machine the oneDNN and cuda-driver lines (printed twice, as two libraries load) come whatever
the level; level 1 removes the cpu_feature_guard line, level 3 also the `cuInit` error (2 is kept
so that C++ errors explaining a failure still show).

Only an import after `import txl_tf` is quieted: a program that imports TensorFlow (or Keras)
before txl_tf gets every start-up line, and so does a process that never imports txl_tf
(`saved_model_cli`, TF Serving); docs/library.md and docs/serving.md say what to do there.
"""
import contextlib
import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile

# Lines TensorFlow's C++ libraries print while they load (before TF_CPP_MIN_LOG_LEVEL applies).
_START_UP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|^[IWE]\d{4} [\d:. ]+\d+ (port|cudart_stub|cuda_platform|cpu_feature_guard|cuda_fft|"
    r"cuda_dnn|cuda_blas|cuda_executor|gpu_device)\.cc:\d+\]"
    r"|^To enable the following instructions: .* rebuild TensorFlow")


def _wanted() -> bool:
    """Whether TensorFlow's start-up is still to be quieted."""
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL") != "0" and "tensorflow" not in sys.modules


@contextlib.contextmanager
def _start_up_lines_dropped():
    """File descriptor 2 captured meanwhile; on exit, what was printed less the start-up noise
    (everything, if the block failed) is written back to stderr."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode("utf-8", "replace").splitlines()
            kept = lines if failed else [ln for ln in lines if not _START_UP_NOISE.search(ln)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
                sys.stderr.flush()


def quiet_start() -> None:
    """Imports TensorFlow without its C++ start-up lines (see the module docstring).

    Does nothing when the user set `TF_CPP_MIN_LOG_LEVEL=0` (then every line is shown) or when
    TensorFlow is already imported. The GPU list is read (not the devices initialized), so
    `tf.config.set_visible_devices` still works afterwards.
    """
    if _wanted():
        with _start_up_lines_dropped():
            import tensorflow as tf  # noqa: F401 - the import is what is quieted
            tf.config.list_physical_devices("GPU")  # the cuInit line comes here


class _QuietLoader(importlib.abc.Loader):
    """TensorFlow's own loader, run with the start-up lines dropped."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        with _start_up_lines_dropped():
            self.loader.exec_module(module)
            module.config.list_physical_devices("GPU")  # the cuInit line comes here


class _QuietFinder(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` once, with `_QuietLoader`, then leaves sys.meta_path."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name) if _wanted() else None
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_when_imported() -> None:
    """Makes the next import of TensorFlow quiet (as `quiet_start`), without importing it now."""
    if _wanted() and not any(isinstance(f, _QuietFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietFinder())
