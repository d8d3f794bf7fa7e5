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

`benign_lines_dropped()` does the same while TensorFlow works, for the error-level lines that
report nothing wrong (`export.py` runs in it: on a CPU with AVX-512, TensorFlow logs `E0000 ...
oneDNN supports DT_INT64 only on platforms with AVX-512. Falling back to the default
Eigen-based implementation` and computes the same results).

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
import threading

# Lines TensorFlow's C++ libraries print while they load (before TF_CPP_MIN_LOG_LEVEL applies).
_START_UP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|^[IWE]\d{4} [\d:. ]+\d+ (port|cudart_stub|cuda_platform|cpu_feature_guard|cuda_fft|"
    r"cuda_dnn|cuda_blas|cuda_executor|gpu_device)\.cc:\d+\]"
    r"|^To enable the following instructions: .* rebuild TensorFlow")


# Error-level lines TensorFlow's C++ code prints while it works that report nothing wrong: on a
# CPU with AVX-512, oneDNN's check of int64 ops logs an E line once per process and falls back
# to TensorFlow's own kernels (the same results).
_BENIGN = re.compile(rb"oneDNN supports DT_\w+ only on platforms with AVX-512\. Falling back")


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


def _forward(read_fd: int, out_fd: int) -> None:
    """Copies what comes on `read_fd` to `out_fd` as it comes, line by line, without the
    `_BENIGN` lines; a partial line is held only while it may be the start of one (an `E`
    log line), so progress bars (no newline) pass at once."""
    held = b""
    while True:
        chunk = os.read(read_fd, 65536)
        held += chunk
        lines = held.split(b"\n")
        held = lines.pop()
        out = b"".join(line + b"\n" for line in lines if not _BENIGN.search(line))
        if held and (not chunk or not held.startswith(b"E")):
            out, held = out + held, b""
        while out:
            out = out[os.write(out_fd, out):]
        if not chunk:
            os.close(read_fd)
            return


@contextlib.contextmanager
def benign_lines_dropped():
    """File descriptor 2 (TensorFlow's C++ log included) passed on as it comes, without the
    error-level lines that report nothing wrong (`_BENIGN`). `TF_CPP_MIN_LOG_LEVEL=0` keeps
    every line."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        yield
        return
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    saved = os.dup(2)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    thread = threading.Thread(target=_forward, args=(read_fd, saved), daemon=True,
                              name="stderr-filter")
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's write end: the thread reads to its end
        thread.join()
        os.close(saved)


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
