"""`import txl_tf` loads TensorFlow without the lines TensorFlow's C++ libraries print as they
load, and the README's library example, run as a user runs it (a fresh Python, no
TF_CPP_MIN_LOG_LEVEL set), prints exactly what the README shows and nothing on stderr.
"""
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)


def readme_library_example():
    """(code, documented output) of the README's "Use it as a library" section."""
    with open(os.path.join(REPO, "README.md")) as f:
        section = f.read().split("## Use it as a library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    return code, shown


def numbers(text):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]


def test_import_prints_nothing_and_keeps_other_stderr():
    proc = run_python("import sys, txl_tf, tensorflow as tf\n"
                      "print(float(tf.reduce_sum(tf.ones([3]))))\n"
                      "print('still mine', file=sys.stderr)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3.0\n" and proc.stderr == "still mine\n", proc.stderr


def test_readme_library_example_prints_what_the_readme_shows():
    code, shown = readme_library_example()
    assert code.startswith("import txl_tf"), "txl_tf must be imported before TensorFlow"
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    assert len(proc.stdout.splitlines()) == len(shown.splitlines())
    assert numbers(proc.stdout) == pytest.approx(numbers(shown), rel=1e-5)


BENIGN_LINE = ("E0000 00:00:1795677100.094888   19118 util.cc:81] oneDNN supports DT_INT64 only "
               "on platforms with AVX-512. Falling back to the default Eigen-based "
               "implementation if present.")


def test_benign_error_lines_are_dropped_and_every_other_line_passes_in_order():
    """What C++ code writes to file descriptor 2 inside `benign_lines_dropped` (export.py's
    work): TensorFlow's oneDNN int64 line is dropped; real error lines, partial lines (a
    progress bar) and Python's own stderr pass, in order; afterwards stderr is as before."""
    code = ("import os, sys\n"
            "from txl_tf.runtime.tf_start import benign_lines_dropped\n"
            "with benign_lines_dropped():\n"
            "    os.write(2, b'E0000 00:00:1.0 1 op_kernel.cc:1] a real error\\n')\n"
            f"    os.write(2, {BENIGN_LINE!r}.encode() + b'\\n')\n"
            "    print('from python', file=sys.stderr, flush=True)\n"
            "    os.write(2, b'progress 10%\\r')\n"
            "    os.write(2, b'progress 20%\\r')\n"
            "print('after', file=sys.stderr)\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO,
                          env=dict(env, PYTHONPATH=REPO), timeout=300)  # bytes: \r kept
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (b"E0000 00:00:1.0 1 op_kernel.cc:1] a real error\nfrom python\n"
                           b"progress 10%\rprogress 20%\rafter\n"), proc.stderr


def test_tf_cpp_min_log_level_0_keeps_the_benign_line():
    code = ("import os\n"
            "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '0'\n"
            "from txl_tf.runtime.tf_start import benign_lines_dropped\n"
            "with benign_lines_dropped():\n"
            f"    os.write(2, {BENIGN_LINE!r}.encode() + b'\\n')\n")
    proc = run_python(code)
    assert proc.stderr == BENIGN_LINE + "\n"
