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
