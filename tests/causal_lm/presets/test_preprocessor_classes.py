"""The preprocessor a preset names (presets/preprocessor_classes.py): only txl-tf's own
classes; a preset's module is never imported, and one line refuses it."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

from causal_lm_support import REPO, from_preset, model_dir
from txl_tf.causal_lm.presets.writing import save_to_preset



PAYLOAD = textwrap.dedent("""
    import pathlib
    pathlib.Path("MARKER").write_text("the preset ran code")
""")
LOAD_FROM_PARENTS = textwrap.dedent("""
    import importlib, os, sys
    from txl_tf.causal_lm import presets
    from txl_tf.causal_lm.errors import CausalLMInputError
    for parent in sys.argv[1:]:  # each holds a preset evilp/, loaded from there
        os.chdir(parent)
        importlib.invalidate_caches()
        try:
            presets.load_preset("evilp")  # the package's public name
        except CausalLMInputError as error:
            print("error:", error)
        else:
            print("loaded", parent)
""")

MODULES = ["evilp.payload", "this", "os"]


def test_a_preset_runs_no_code_its_preprocessor_json_names(tmp_path):
    """A preset shipping evilp/payload.py, loaded from its parent directory (the current
    directory is on sys.path of `python -c`), naming the module of its own payload, `this` (it
    prints as it is imported) or `os.system`: nothing is imported, one line refuses each (one
    fresh process loads the three presets)."""
    path, _ = model_dir(tmp_path / "m", "byte")
    original = save_to_preset(from_preset(path), tmp_path / "p")
    parents = []
    for module in MODULES:
        parent = tmp_path / module
        preset = shutil.copytree(original, parent / "evilp")
        (preset / "payload.py").write_text(PAYLOAD)
        (preset / "__init__.py").write_text(PAYLOAD)
        spec_path = os.path.join(preset, "preprocessor.json")
        with open(spec_path) as f:
            spec = json.load(f)
        spec.update(module=module, class_name="system" if module == "os" else "X")
        spec.pop("registered_name")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        parents.append(str(parent))
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", LOAD_FROM_PARENTS] + parents, cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for parent in [str(tmp_path)] + parents:
        assert not os.path.exists(os.path.join(parent, "MARKER")), "the preset's code ran"
    assert "Zen of Python" not in proc.stdout and "Beautiful is better" not in proc.stdout
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(MODULES), lines
    for module, line in zip(MODULES, lines):
        assert line.startswith("error: "), line
        assert f"evilp/preprocessor.json names the preprocessor {module!r}" in line
        assert "pass preprocessor=" in line
