"""Presets: `save_to_preset` / `load_preset` of the causal_lm functions. A preset saved here and
read in a fresh process gives the same log-probabilities and generated text; a model directory
(any checkpoint) reads as a preset does; bad inputs give one clear error."""
import errno
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
import reference_numpy
from causal_lm_support import REPO, causal_lm, from_preset, model_dir, run_runner
from import_helpers import write_tf1_checkpoint
from tf_records.causal_lm_preprocessor import CausalLMPreprocessor
from txl_tf.causal_lm import presets
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.sampler import get_sampler
from txl_tf.generation.text_generation import generate

PROMPT = "import os\n"
IDS = np.arange(1, 41, dtype=np.int32).reshape(2, 20) * 3


@pytest.fixture(scope="module")
def trained(trained_byte_model):
    return trained_byte_model["model"]


def log_probs(backbone):
    return backbone(tf.constant(IDS), mems=None, training=False)["log_probs"].numpy()


FRESH = textwrap.dedent("""
    import json, sys
    import numpy as np
    from txl_tf.causal_lm import presets
    from txl_tf.generation.sampler import get_sampler
    from txl_tf.generation.text_generation import generate
    from causal_lm_support import from_preset
    lm = from_preset(sys.argv[1])
    ids = np.arange(1, 41, dtype=np.int32).reshape(2, 20) * 3
    out = lm.backbone(ids, mems=None, training=False)["log_probs"].numpy()
    text = generate(lm, ["import os\\n"], max_length=30, sampler=get_sampler("top_k", 5))
    np.save(sys.argv[2], out)
    print(json.dumps({"text": text, "class": type(lm.preprocessor).__module__}))
""")


def test_preset_reloaded_in_a_fresh_process_gives_the_same_outputs(trained, tmp_path):
    lm = from_preset(trained)
    path = presets.save_to_preset(lm, tmp_path / "preset")
    assert sorted(os.listdir(path)) == sorted(presets.PRESET_FILES)
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}")
    proc = subprocess.run([sys.executable, "-c", FRESH, path, str(tmp_path / "lp.npy")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fresh["class"] == "tf_records.causal_lm_preprocessor"  # named by preprocessor.json
    np.testing.assert_array_equal(np.load(tmp_path / "lp.npy"), log_probs(lm.backbone))
    assert fresh["text"] == generate(lm, [PROMPT], max_length=30,
                                     sampler=get_sampler("top_k", 5))


def test_preset_files_are_text_json_and_h5(trained, tmp_path):
    lm = from_preset(trained)
    path = presets.save_to_preset(lm, tmp_path / "preset")
    for name in presets.PRESET_FILES:
        with open(os.path.join(path, name), "rb") as f:
            assert not f.read(2).startswith(b"\x80"), f"{name} is a pickle"
    with open(os.path.join(path, "config.json")) as f:
        assert txl_tf.TransformerXLConfig.from_json(f.read()) == lm.backbone.config
    for name in presets.VOCAB_FILES[:1]:
        with open(os.path.join(path, name), "rb") as a, open(os.path.join(trained, name),
                                                              "rb") as b:
            assert a.read() == b.read()
    with open(os.path.join(path, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["parameter_count"] == sum(int(np.prod(w.shape)) for w in lm.backbone.weights)
    assert (meta["tensorflow_version"], meta["keras_version"], meta["txl_tf_version"]) == (
        tf.__version__, keras.__version__, txl_tf.__version__)
    assert meta["training_data"]["dataset"] == "builtin"
    assert meta["training_data"]["level"] == "byte"
    with open(os.path.join(path, "preprocessor.json")) as f:
        spec = json.load(f)
    assert spec["module"] == "tf_records.causal_lm_preprocessor"
    assert spec["registered_name"] == "tf_records>CausalLMPreprocessor"


@pytest.mark.parametrize("checkpoint", ["latest", "best", "ckpt-2"])
def test_a_model_directory_reads_at_any_checkpoint(trained, checkpoint):
    lm = from_preset(trained, checkpoint=checkpoint)
    expected = txl_tf.load_model(trained, checkpoint=checkpoint)
    np.testing.assert_array_equal(log_probs(lm.backbone), log_probs(expected))
    assert isinstance(lm.preprocessor, CausalLMPreprocessor)
    assert lm.preprocessor.level == "byte"


def test_preset_from_model_dir_records_its_source(trained, tmp_path):
    path = presets.preset_from_model_dir(trained, tmp_path / "p", checkpoint="ckpt-2")
    with open(os.path.join(path, "metadata.json")) as f:
        source = json.load(f)["source"]
    assert source["checkpoint_name"] == "ckpt-2" and source["checkpoint_step"] == 2
    assert source["train_summary"]["step"] == 4
    np.testing.assert_array_equal(log_probs(from_preset(path).backbone),
                                  log_probs(txl_tf.load_model(trained, checkpoint="ckpt-2")))


@pytest.mark.parametrize("level", ["word", "char"])
def test_every_level_round_trips(tmp_path, level):
    path, model = model_dir(tmp_path / "m", level)
    lm = from_preset(path)
    preset = presets.save_to_preset(lm, tmp_path / "p")
    again = from_preset(preset)
    text = "w1 w2 zz\nw3" if level == "word" else "ab é"
    np.testing.assert_array_equal(again.preprocessor.tokenize(text),
                                  lm.preprocessor.tokenize(text))
    assert again.preprocessor.corpus_info == lm.preprocessor.corpus_info
    assert generate(again, text, max_length=12) == generate(lm, text, max_length=12)


def test_saving_again_replaces_the_preset_and_a_model_without_vocabulary(tmp_path):
    _, model = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(causal_lm(model), tmp_path / "p")
    assert presets.PREPROCESSOR_FILE not in os.listdir(preset)
    _, other = model_dir(tmp_path / "m2", "byte", seed=1)
    presets.save_to_preset(causal_lm(other), preset)
    backbone, preprocessor = presets.load_preset(preset)
    assert preprocessor is None
    np.testing.assert_array_equal(log_probs(backbone), log_probs(other))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]  # no temporaries left


def _broken(tmp_path, what):
    path, model = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(from_preset(path), tmp_path / "p")
    if what == "preprocessor_json":
        with open(os.path.join(preset, "preprocessor.json"), "w") as f:
            f.write("{not json")
    elif what == "module":
        spec = {"module": "no_such_module.x", "class_name": "X", "config": {}}
        with open(os.path.join(preset, "preprocessor.json"), "w") as f:
            json.dump(spec, f)
    elif what in MALFORMED:
        with open(os.path.join(preset, "preprocessor.json"), "wb") as f:
            f.write(MALFORMED[what])
    elif what == "weights":
        with open(os.path.join(preset, "model.weights.h5"), "wb") as f:
            f.write(b"truncated")
    elif what == "vocab":
        with open(os.path.join(preset, "vocab.txt"), "a") as f:
            f.write("extra\n")
    return preset


MALFORMED = {
    "not_utf8": b'{"module": "\xff\xfe"}',
    "a_list": b'["tf_records.causal_lm_preprocessor"]',
    "module_a_number": b'{"module": 3, "class_name": "CausalLMPreprocessor"}',
    "config_a_list": (b'{"module": "tf_records.causal_lm_preprocessor", "class_name": '
                      b'"CausalLMPreprocessor", "config": [1]}'),
    "name_a_number": (b'{"module": "tf_records.causal_lm_preprocessor", "class_name": '
                      b'"CausalLMPreprocessor", "config": {"name": 5}}'),
    "foreign_registered_name": (b'{"module": "tf_records.causal_lm_preprocessor", '
                                b'"class_name": "CausalLMPreprocessor", '
                                b'"registered_name": "evil>X", "config": {}}'),
    "deep": b"[" * 100000 + b"]" * 100000,
}


@pytest.mark.parametrize("what,message", [
    ("preprocessor_json", "cannot be read as UTF-8 JSON"),
    ("module", "names the preprocessor 'no_such_module.x'.'X', which is not txl-tf's"),
    ("not_utf8", "cannot be read as UTF-8 JSON"),
    ("a_list", "holds a JSON list, not a serialized Keras object"),
    ("module_a_number", "no 'module' and 'class_name' strings"),
    ("config_a_list", "'config' is a JSON list"),
    ("name_a_number", "'name' that is not a string"),
    ("foreign_registered_name", "which is not txl-tf's"),
    ("deep", "cannot be read as UTF-8 JSON"),
    ("weights", "cannot read the weights"),
    ("vocab", "cannot read the vocabulary"),
])
def test_damaged_presets_give_one_clear_error(tmp_path, what, message):
    preset = _broken(tmp_path, what)
    with pytest.raises(CausalLMInputError, match=message) as error:
        presets.load_preset(preset)
    assert "\n" not in str(error.value)


PAYLOAD = textwrap.dedent("""
    import pathlib
    pathlib.Path("MARKER").write_text("the preset ran code")
""")
LOAD_FROM_PARENT = textwrap.dedent("""
    import sys
    from txl_tf.causal_lm import presets
    from txl_tf.causal_lm.errors import CausalLMInputError
    try:
        presets.load_preset("evilp")
    except CausalLMInputError as error:
        print("error:", error)
        sys.exit(2)
""")


@pytest.mark.parametrize("module", ["evilp.payload", "this", "os"])
def test_a_preset_runs_no_code_its_preprocessor_json_names(tmp_path, module):
    """A preset shipping evilp/payload.py, loaded from its parent directory (the current
    directory is on sys.path of `python -c`): nothing is imported, one line refuses it."""
    path, _ = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(from_preset(path), tmp_path / "evilp")
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


def test_a_refused_preprocessor_can_be_given_instead(tmp_path):
    """The fix the refusal names: the caller's own preprocessor, with the preset's weights."""
    path, model = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(from_preset(path), tmp_path / "p")
    with open(os.path.join(preset, "preprocessor.json"), "w") as f:
        json.dump({"module": "this", "class_name": "X", "config": {}}, f)
    backbone, preprocessor = presets.load_preset(preset, preprocessor=CausalLMPreprocessor(path))
    np.testing.assert_array_equal(log_probs(backbone), log_probs(model))
    assert preprocessor.vocabulary_size == 256


def test_bad_arguments_give_one_clear_error(tmp_path):
    path, _ = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(from_preset(path), tmp_path / "p")
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    word, _ = model_dir(tmp_path / "w", "word")
    cases = [
        (lambda: presets.load_preset(tmp_path / "file"), "is not a directory"),
        (lambda: presets.load_preset(tmp_path / "empty"), "has no config.json"),
        (lambda: presets.load_preset(preset, checkpoint="best"), "applies to model directories"),
        (lambda: presets.load_preset(path, checkpoint="ckpt-9"), "no such checkpoint"),
        (lambda: presets.load_preset(path, preprocessor=CausalLMPreprocessor(word)),
         "the preprocessor has 23 symbols but the model has n_token=256"),
        (lambda: presets.save_to_preset(from_preset(path), tmp_path / "other"),
         "exists and is not a preset"),
        (lambda: presets.save_to_preset(from_preset(path), tmp_path / "file"),
         "exists and is not a preset"),
    ]
    for call, message in cases:
        with pytest.raises(CausalLMInputError, match=message) as error:
            call()
        assert "\n" not in str(error.value), str(error.value)


def test_import_weights_writes_a_preset_of_the_imported_model(tmp_path):
    """runners/import_weights.py --preset_dir: the TF1 checkpoint's model, as a preset."""
    cfg = dict(n_layer=1, d_model=8, n_head=2, d_head=4, d_inner=16, n_token=6, div_val=1,
               cutoffs=[])
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-0"),
                                  reference_numpy.random_tf1_params(cfg, np.random.default_rng(0)))
    (tmp_path / "vocab.txt").write_text("<eos>\nthe\ncat\nsat\non\nmat\n")
    (tmp_path / "corpus-info.json").write_text(json.dumps(
        {"vocab_size": 6, "cutoffs": [0, 6], "dataset": "wt103"}))
    model, preset = str(tmp_path / "model"), str(tmp_path / "preset")
    proc = run_runner("import_weights", [
        "--source=tf1", f"--checkpoint={prefix}", f"--vocab_file={tmp_path / 'vocab.txt'}",
        f"--corpus_info={tmp_path / 'corpus-info.json'}", f"--model_dir={model}",
        f"--preset_dir={preset}", "--tgt_len=5", "--mem_len=7"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"wrote the preset {preset}" in proc.stdout
    lm = from_preset(preset)
    ids = np.array([[1, 2, 3, 0, 4, 5]], np.int32)
    expected = txl_tf.load_model(model)
    np.testing.assert_array_equal(lm.backbone(ids)["log_probs"], expected(ids)["log_probs"])
    np.testing.assert_array_equal(lm.preprocessor.tokenize("the cat sat\non"), [1, 2, 3, 0, 4])
    with open(os.path.join(preset, "metadata.json")) as f:
        assert json.load(f)["source"]["import"]["source"] == "tf1"


# -- replacing a preset loses nothing: the user's files, kill -9, a full disk ----------------

def test_a_preset_holding_the_users_files_is_not_replaced(tmp_path):
    path, model = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(causal_lm(model), tmp_path / "p")
    (tmp_path / "p" / "notes.txt").write_text("my notes")
    (tmp_path / "p" / "data").mkdir()
    (tmp_path / "p" / "data" / "train.csv").write_text("a,b\n")
    _, other = model_dir(tmp_path / "m2", "byte", seed=1)
    with pytest.raises(CausalLMInputError, match=r"holds files that are not the preset's "
                                                 r"\(data, notes.txt\).*move them out") as error:
        presets.save_to_preset(causal_lm(other), preset)
    assert "\n" not in str(error.value)
    assert (tmp_path / "p" / "notes.txt").read_text() == "my notes"
    assert (tmp_path / "p" / "data" / "train.csv").read_text() == "a,b\n"
    np.testing.assert_array_equal(log_probs(presets.load_preset(preset)[0]), log_probs(model))
    os.symlink(tmp_path / "m", tmp_path / "link")
    with pytest.raises(CausalLMInputError, match="a file or a link"):
        presets.save_to_preset(causal_lm(other), tmp_path / "link")
    assert sorted(os.listdir(tmp_path / "m")) == sorted(os.listdir(path))


KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    from causal_lm_support import causal_lm, model_dir
    from txl_tf.causal_lm import presets
    preset, model_path, point = sys.argv[1:]
    _, model = model_dir(model_path, "byte", seed=1)
    real_replace = os.replace

    def replace(src, dst):  # the two renames of the swap: preset -> .old, .tmp -> preset
        if point == "before_swap" and src == preset:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)
        if point == "between_renames" and src == preset:
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
    presets.save_to_preset(causal_lm(model), preset)
""")


def killed_save(tmp_path, point):
    """A preset of model seed 0 at tmp_path/p, replaced by a save of seed 1 that is killed
    (SIGKILL) at `point`; returns (preset path, old model, new model)."""
    _, old = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(causal_lm(old), tmp_path / "p")
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}")
    proc = subprocess.run([sys.executable, "-c", KILLED_SAVE, preset, str(tmp_path / "m2"),
                           point], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == -9, proc.stderr[-3000:]
    return preset, old, txl_tf.load_model(str(tmp_path / "m2"))


def test_a_save_killed_between_its_renames_is_undone_by_the_next_load(tmp_path):
    preset, old, _ = killed_save(tmp_path, "between_renames")
    leftovers = sorted(n for n in os.listdir(tmp_path) if n.startswith(".p."))
    assert not os.path.exists(preset) and [n.split("-")[0] for n in leftovers] == [".p.old",
                                                                                   ".p.tmp"]
    backbone, _ = presets.load_preset(preset)  # restores the complete old preset
    np.testing.assert_array_equal(log_probs(backbone), log_probs(old))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]  # the half-swapped new one gone
    assert sorted(os.listdir(preset)) == ["config.json", "metadata.json", "model.weights.h5"]


@pytest.mark.parametrize("point", ["before_swap", "between_renames"])
def test_the_next_save_after_a_killed_one_writes_a_whole_preset(tmp_path, point):
    preset, old, new = killed_save(tmp_path, point)
    if point == "before_swap":  # the old preset is still in place
        np.testing.assert_array_equal(log_probs(presets.load_preset(preset)[0]), log_probs(old))
    presets.save_to_preset(causal_lm(new), preset)
    np.testing.assert_array_equal(log_probs(presets.load_preset(preset)[0]), log_probs(new))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]


def test_weights_made_in_memory_are_those_save_weights_writes(tmp_path):
    _, model = model_dir(tmp_path / "m", "byte")
    (tmp_path / "mem.weights.h5").write_bytes(presets.weights_file_bytes(model))
    model.save_weights(str(tmp_path / "keras.weights.h5"))
    for name in ("mem.weights.h5", "keras.weights.h5"):
        fresh = presets._built(txl_tf.TransformerXL(model.config))
        fresh.load_weights(str(tmp_path / name))
        np.testing.assert_array_equal(log_probs(fresh), log_probs(model))


def test_a_full_disk_during_a_save_leaves_the_old_preset_and_one_line(tmp_path, monkeypatch):
    _, old = model_dir(tmp_path / "m", "byte")
    preset = presets.save_to_preset(causal_lm(old), tmp_path / "p")
    _, new = model_dir(tmp_path / "m2", "byte", seed=1)

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(presets, "write_json_atomic", full)
    with pytest.raises(presets.CausalLMRuntimeError, match=r"cannot write the preset .* \(no "
                                                           "space left on the device\)") as error:
        presets.save_to_preset(causal_lm(new), preset)
    assert "\n" not in str(error.value) and error.value.exit_code == 1
    monkeypatch.undo()
    np.testing.assert_array_equal(log_probs(presets.load_preset(preset)[0]), log_probs(old))
    assert sorted(os.listdir(tmp_path)) == ["m", "m2", "p"]


FULL_DISK = textwrap.dedent("""
    import sys
    from causal_lm_support import causal_lm, model_dir
    from txl_tf.causal_lm import presets
    from txl_tf.causal_lm.errors import CausalLMRuntimeError
    _, new = model_dir(sys.argv[2], "byte", seed=1, d_model=32, d_inner=64)
    try:
        presets.save_to_preset(causal_lm(new), sys.argv[1])
    except CausalLMRuntimeError as error:
        print("error:", error)
        sys.exit(1)
""")


def test_a_really_full_disk_gives_one_line_and_no_crash(tmp_path):
    """A tmpfs just big enough for the old preset (root only): HDF5 never writes there."""
    mount = tmp_path / "small"
    mount.mkdir()
    _, old = model_dir(tmp_path / "m", "byte")
    size = sum(-(-os.path.getsize(os.path.join(tmp_path / "m", n)) // 4096) for n in
               os.listdir(tmp_path / "m")) * 4096 + 64 * 1024
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here (not root)")
    try:
        preset = presets.save_to_preset(causal_lm(old), mount / "p")
        env = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}")
        proc = subprocess.run([sys.executable, "-c", FULL_DISK, preset, str(tmp_path / "m2")],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 1, proc.stderr[-3000:]  # not -11 (SIGSEGV)
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        line, = proc.stdout.strip().splitlines()
        assert "no space left on the device" in line
        np.testing.assert_array_equal(log_probs(presets.load_preset(preset)[0]), log_probs(old))
        assert os.listdir(mount) == ["p"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)
