"""A preset of a model directory (presets/from_model_dir.py): its weights and vocabulary, the
source recorded in metadata.json; runners/import_weights.py --preset_dir writes one."""
import json
import os

import numpy as np
import pytest

import txl_tf
import reference_numpy
from causal_lm_support import from_preset, log_probs
from runner_calls import call_runner
from import_helpers import write_tf1_checkpoint
from txl_tf.causal_lm.presets.from_model_dir import preset_from_model_dir


@pytest.fixture(scope="module")
def trained(trained_byte_model):
    return trained_byte_model["model"]


def test_preset_from_model_dir_records_its_source(trained, tmp_path):
    path = preset_from_model_dir(trained, tmp_path / "p", checkpoint="ckpt-2")
    with open(os.path.join(path, "metadata.json")) as f:
        source = json.load(f)["source"]
    assert source["checkpoint_name"] == "ckpt-2" and source["checkpoint_step"] == 2
    assert source["train_summary"]["step"] == 4
    np.testing.assert_array_equal(log_probs(from_preset(path).backbone),
                                  log_probs(txl_tf.load_model(trained, checkpoint="ckpt-2")))


def test_import_weights_writes_a_preset_of_the_imported_model(tmp_path):
    """runners/import_weights.py --preset_dir: the TF1 checkpoint's model, as a preset (the
    runner's main in this process, `call_runner`)."""
    cfg = dict(n_layer=1, d_model=8, n_head=2, d_head=4, d_inner=16, n_token=6, div_val=1,
               cutoffs=[])
    prefix = write_tf1_checkpoint(str(tmp_path / "model.ckpt-0"),
                                  reference_numpy.random_tf1_params(cfg, np.random.default_rng(0)))
    (tmp_path / "vocab.txt").write_text("<eos>\nthe\ncat\nsat\non\nmat\n")
    (tmp_path / "corpus-info.json").write_text(json.dumps(
        {"vocab_size": 6, "cutoffs": [0, 6], "dataset": "wt103"}))
    model, preset = str(tmp_path / "model"), str(tmp_path / "preset")
    proc = call_runner("import_weights", [
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


