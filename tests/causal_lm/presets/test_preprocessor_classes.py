"""The preprocessor a preset names (presets/preprocessor_classes.py): only txl-tf's own
classes; a preset's module is never imported, and one line refuses it."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from causal_lm_support import REPO, from_preset, model_dir
from txl_tf.causal_lm.presets.writing import save_to_preset



PAYLOAD = textwrap.dedent("""
    import pathlib
    pathlib.Path("MARKER").write_text("the preset ran code")
""")
LOAD_FROM_PARENT = textwrap.dedent("""
    import sys
    from txl_tf.causal_lm import presets
    from txl_tf.causal_lm.errors import CausalLMInputError
    try:
        presets.load_preset("evilp")  # the package's public name
    except CausalLMInputError as error:
        print("error:", error)
        sys.exit(2)
""")


@pytest.mark.parametrize("module", ["evilp.payload", "this", "os"])
def test_a_preset_runs_no_code_its_preprocessor_json_names(tmp_path, module):
    """A preset shipping evilp/payload.py, loaded from its parent directory (the current
    directory is on sys.path of `python -c`): nothing is imported, one line refuses it."""
    path, _ = model_dir(tmp_path / "m", "byte")
    preset = save_to_preset(from_preset(path), tmp_path / "evilp")
    (tmp_path / "evilp" / "payload.py").write_text(PAYLOAD)
    (tmp_path / "evilp" / "__init__.py").write_text(PAYLOAD)
    spec_path = os.path.join(preset, "preprocessor.json")
    with open(spec_path) as f:
        spec = json.load(f)
    spec.update(module=module, class_name="system" if module == "os" else "X")
    spec.pop("registered_name")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", LOAD_FROM_PARENT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert not (tmp_path / "MARKER").exists(), "the preset's code ran"
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Zen of Python" not in proc.stdout and "Beautiful is better" not in proc.stdout
    line, = proc.stdout.strip().splitlines()
    assert f"evilp/preprocessor.json names the preprocessor {module!r}" in line
    assert "pass preprocessor=" in line
