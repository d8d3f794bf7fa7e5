"""Loading a preset or a model directory (presets/loading.py): a preset saved here and read in
a fresh process gives the same log-probabilities and generated text; a model directory (any
checkpoint) reads as a preset does; damaged files and bad arguments give one clear error."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from causal_lm_support import REPO, from_preset, log_probs, model_dir
from tf_records.causal_lm_preprocessor import CausalLMPreprocessor
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.sampler import get_sampler
from txl_tf.generation.text_generation import generate
from txl_tf.storage import model_dir_layout as layout
from txl_tf.causal_lm.presets.loading import load_preset
from txl_tf.causal_lm.presets.writing import save_to_preset

PROMPT = "import os\n"


@pytest.fixture(scope="module")
def trained(trained_byte_model):
    return trained_byte_model["model"]


@pytest.fixture(scope="module")
def trained_preset(trained, tmp_path_factory):
    """(causal LM of `trained`, the preset it saved), made once for the module, read only."""
    lm = from_preset(trained)
    return lm, save_to_preset(lm, tmp_path_factory.mktemp("trained") / "preset")



FRESH = textwrap.dedent("""
    import json, sys
    import numpy as np
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


def test_preset_reloaded_in_a_fresh_process_gives_the_same_outputs(trained_preset, tmp_path):
    lm, path = trained_preset
    assert sorted(os.listdir(path)) == sorted(layout.PRESET_FILES)
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{os.path.join(REPO, 'tests', 'support')}")
    proc = subprocess.Popen([sys.executable, "-c", FRESH, path, str(tmp_path / "lp.npy")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:  # this process's outputs while the fresh one starts
        expected = log_probs(lm.backbone)
        text = generate(lm, [PROMPT], max_length=30, sampler=get_sampler("top_k", 5))
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    fresh = json.loads(stdout.strip().splitlines()[-1])
    assert fresh["class"] == "tf_records.causal_lm_preprocessor"  # named by preprocessor.json
    np.testing.assert_array_equal(np.load(tmp_path / "lp.npy"), expected)
    assert fresh["text"] == text


def test_preset_files_are_text_json_and_h5(trained, trained_preset):
    lm, path = trained_preset
    for name in layout.PRESET_FILES:
        with open(os.path.join(path, name), "rb") as f:
            assert not f.read(2).startswith(b"\x80"), f"{name} is a pickle"
    with open(os.path.join(path, "config.json")) as f:
        assert txl_tf.TransformerXLConfig.from_json(f.read()) == lm.backbone.config
    for name in layout.VOCAB_FILES[:1]:
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


@pytest.mark.parametrize("level", ["word", "char"])
def test_every_level_round_trips(tmp_path, level):
    """One layer: the preprocessor's files and the weights round trip whatever the depth (two
    layers: the trained model's preset, `test_preset_reloaded_in_a_fresh_process...`)."""
    path, model = model_dir(tmp_path / "m", level, n_layer=1)
    lm = from_preset(path)
    preset = save_to_preset(lm, tmp_path / "p")
    again = from_preset(preset)
    text = "w1 w2 zz\nw3" if level == "word" else "ab é"
    np.testing.assert_array_equal(again.preprocessor.tokenize(text),
                                  lm.preprocessor.tokenize(text))
    assert again.preprocessor.corpus_info == lm.preprocessor.corpus_info
    assert generate(again, text, max_length=12) == generate(lm, text, max_length=12)


@pytest.fixture(scope="module")
def byte(tmp_path_factory):
    """(model directory, model, its preset) of a random tiny one-layer byte-level model, made
    once for the module; a test that changes the preset changes its own copy (`preset_copy`)."""
    root = tmp_path_factory.mktemp("byte")
    path, model = model_dir(root / "m", "byte", n_layer=1)
    return path, model, save_to_preset(from_preset(path), root / "p")


def preset_copy(byte, tmp_path):
    """A copy of `byte`'s preset in `tmp_path`, for a test to damage."""
    return str(shutil.copytree(byte[2], tmp_path / "p"))


def _broken(byte, tmp_path, what):
    preset = preset_copy(byte, tmp_path)
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
def test_damaged_presets_give_one_clear_error(byte, tmp_path, what, message):
    preset = _broken(byte, tmp_path, what)
    with pytest.raises(CausalLMInputError, match=message) as error:
        load_preset(preset)
    assert "\n" not in str(error.value)


def test_a_refused_preprocessor_can_be_given_instead(byte, tmp_path):
    """The fix the refusal names: the caller's own preprocessor, with the preset's weights."""
    path, model, _ = byte
    preset = preset_copy(byte, tmp_path)
    with open(os.path.join(preset, "preprocessor.json"), "w") as f:
        json.dump({"module": "this", "class_name": "X", "config": {}}, f)
    backbone, preprocessor = load_preset(preset, preprocessor=CausalLMPreprocessor(path))
    np.testing.assert_array_equal(log_probs(backbone), log_probs(model))
    assert preprocessor.vocabulary_size == 256


def test_bad_arguments_give_one_clear_error(byte, tmp_path):
    path, _, preset = byte  # read only: every call here is refused before it writes
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    word, _ = model_dir(tmp_path / "w", "word")
    cases = [
        (lambda: load_preset(tmp_path / "file"), "is not a directory"),
        (lambda: load_preset(tmp_path / "empty"), "has no config.json"),
        (lambda: load_preset(preset, checkpoint="best"), "applies to model directories"),
        (lambda: load_preset(path, checkpoint="ckpt-9"), "no such checkpoint"),
        (lambda: load_preset(path, preprocessor=CausalLMPreprocessor(word)),
         "the preprocessor has 23 symbols but the model has n_token=256"),
        (lambda: save_to_preset(from_preset(path), tmp_path / "other"),
         "exists and is not a preset"),
        (lambda: save_to_preset(from_preset(path), tmp_path / "file"),
         "exists and is not a preset"),
    ]
    for call, message in cases:
        with pytest.raises(CausalLMInputError, match=message) as error:
            call()
        assert "\n" not in str(error.value), str(error.value)
