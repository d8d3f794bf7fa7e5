"""Presets: `save_to_preset` / `load_preset` of the causal_lm functions. A preset saved here and
read in a fresh process gives the same log-probabilities and generated text; a model directory
(any checkpoint) reads as a preset does; bad inputs give one clear error."""
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
from causal_lm_support import (REPO, causal_lm, from_preset, model_dir, run_runner,
                               trained_model_dir)
from import_helpers import write_tf1_checkpoint
from tf_records.causal_lm_preprocessor import CausalLMPreprocessor
from txl_tf.causal_lm import presets
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.causal_lm.generation import generate

PROMPT = "import os\n"
IDS = np.arange(1, 41, dtype=np.int32).reshape(2, 20) * 3


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_model_dir(str(tmp_path_factory.mktemp("trained")))


def log_probs(backbone):
    return backbone(tf.constant(IDS), mems=None, training=False)["log_probs"].numpy()


FRESH = textwrap.dedent("""
    import json, sys
    import numpy as np
    from txl_tf.causal_lm import presets
    from txl_tf.causal_lm.generation import generate
    from causal_lm_support import from_preset
    lm = from_preset(sys.argv[1])
    ids = np.arange(1, 41, dtype=np.int32).reshape(2, 20) * 3
    out = lm.backbone(ids, mems=None, training=False)["log_probs"].numpy()
    text = generate(lm, ["import os\\n"], max_length=30, sampler="top_k", seed=5)
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
    assert fresh["text"] == generate(lm, [PROMPT], max_length=30, sampler="top_k", seed=5)


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
    elif what == "weights":
        with open(os.path.join(preset, "model.weights.h5"), "wb") as f:
            f.write(b"truncated")
    elif what == "vocab":
        with open(os.path.join(preset, "vocab.txt"), "a") as f:
            f.write("extra\n")
    return preset


@pytest.mark.parametrize("what,message", [
    ("preprocessor_json", "cannot be read as JSON"),
    ("module", "module no_such_module.x cannot be imported"),
    ("weights", "cannot read the weights"),
    ("vocab", "cannot read the vocabulary"),
])
def test_damaged_presets_give_one_clear_error(tmp_path, what, message):
    preset = _broken(tmp_path, what)
    with pytest.raises(CausalLMInputError, match=message) as error:
        presets.load_preset(preset)
    assert "\n" not in str(error.value)


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
