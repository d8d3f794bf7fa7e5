"""`txl_tf.causal_lm.serving_export.export`: the SavedModel of runners/export.py (its main, run
in this process) for the same model and settings, loaded by TF's session-based loader (as TF
Serving loads it); its generate_text continues a prompt as `generate` does. Bad inputs give one
clear error."""
import contextlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signatures' ops, for the session loader)
from tensorflow_serving.apis import prediction_log_pb2

from causal_lm_support import causal_lm, from_preset, model_dir
from runner_calls import call_runner
from saved_model_calls import SavedModelCalls
from shared_dirs import read_only_dir
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.causal_lm.serving_export import export
from txl_tf.generation.text_generation import context_of, generate
from txl_tf.generation.sampler import Sampler
from txl_tf.serving.export_options import ExportInputError

SETTINGS = dict(mem_len=6, clamp_len=5, same_length=True, gen_mem_len=40, warmup_requests=1)
# One layer: what is compared is export() against runners/export.py and the loaded signatures
# against the Keras model, not how layers stack (the memory of a 2-layer model through every
# loader: tests/serving/test_serving_loaders.py); each layer adds to every signature's tracing.
MODEL = dict(seed=3, clamp_len=5, n_layer=1)
# Written by the runner and by export() from the same model, except where they say so.
PER_EXPORT = ("checkpoint", "checkpoint_name", "checkpoint_step")

def through_session(path):
    """The outputs of score, generate and generate_text of the export at `path`, run by the
    session-based loader: ({name/output: array}, signature names)."""
    sampling = dict(num_tokens=np.array([8, 8], np.int32),
                    temperature=np.array([0.0, 0.9], np.float32),
                    top_k=np.array([0, 4], np.int32), top_p=np.array([1.0, 0.9], np.float32),
                    seed=np.array([3, 4], np.int64))
    requests = {
        "score": dict(tokens=np.array([[1, 2, 3], [4, 5, 6]], np.int32),
                      mems=np.zeros([2, MODEL["n_layer"], 6, 16], np.float32)),
        "generate": dict(prompt=np.array([[5, 6, 7], [8, 9, 10]], np.int32), **sampling),
        "generate_text": dict(text=np.array([b"w1 w2 w3", b"w4 nope w5"]), **sampling)}
    call = SavedModelCalls(path, "session")
    out = {f"{name}/{key}": value for name, feeds in requests.items()
           for key, value in call(name, feeds).items()}
    return out, call.names()


def info_of(path):
    with open(os.path.join(path, "assets.extra", "txl_export.json")) as f:
        return json.load(f)


def warmup_of(path):
    """The export's warmup requests as PredictionLog protos (their maps have no byte order)."""
    records = tf.data.TFRecordDataset(
        os.path.join(path, "assets.extra", "tf_serving_warmup_requests"))
    return [prediction_log_pb2.PredictionLog.FromString(r.numpy()) for r in records]


def record_export(root, tag, info):
    """Writes root/TAG.json ({"info": what the export returned, "signatures": the names the
    session loader lists}) and root/TAG.npz (what it gives, `through_session`; strings as
    bytes) for the export `info` describes."""
    out, names = through_session(info["export_path"])
    np.savez(os.path.join(root, f"{tag}.npz"),
             **{k: v.astype("S") if v.dtype == object else v for k, v in out.items()})
    with open(os.path.join(root, f"{tag}.json"), "w") as f:
        json.dump({"info": info, "signatures": names}, f)


def recorded_export(root, tag):
    """(info, ({name/output: array}, signature names)) that `record_export` wrote."""
    with open(os.path.join(root, f"{tag}.json")) as f:
        recorded = json.load(f)
    arrays = np.load(os.path.join(root, f"{tag}.npz"))
    return recorded["info"], ({k: arrays[k] for k in arrays.files}, recorded["signatures"])


def build_model_dir(root):
    """Writes root/model: a tiny word-level model directory (`MODEL`: seed 3, clamp_len 5, one
    layer)."""
    model_dir(os.path.join(root, "model"), "word", **MODEL)


def build_keras_export(root, path):
    """Writes the export of the model directory `path` by `export()` (root/keras/txl),
    recorded as keras.json / keras.npz."""
    record_export(root, "keras", export(from_preset(path), os.path.join(root, "keras", "txl"),
                                        **SETTINGS))


def build_runner_export(root, path):
    """Writes the export of the model directory `path` by runners/export.py (its main in this
    process, `call_runner`; root/runner/txl), recorded as runner.json / runner.npz."""
    flags = [f"--{k}={v}" for k, v in SETTINGS.items() if k != "same_length"]
    proc = call_runner("export", [f"--model_dir={path}", f"--export_dir={root}/runner/txl",
                                  "--same_length"] + flags)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record_export(root, "runner", json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def shared_model_dir(tmp_path_factory):
    """`build_model_dir`'s model directory, made once per run for both xdist workers and
    read-only: both exports read it, and neither waits for the other."""
    with read_only_dir(tmp_path_factory, "causal_lm_export_model", build_model_dir) as root:
        yield os.path.join(root, "model")


@pytest.fixture(scope="module")
def keras_export(shared_model_dir, tmp_path_factory):
    """`build_keras_export`'s directory (made once per run for both xdist workers and
    read-only, `shared_dirs.read_only_dir`), the causal LM of its model directory, the
    export's info and what the session loader gives."""
    with read_only_dir(tmp_path_factory, "causal_lm_keras_export",
                       lambda root: build_keras_export(root, shared_model_dir)) as root:
        lm = from_preset(shared_model_dir)
        info, served = recorded_export(root, "keras")
        yield dict(root=root, lm=lm, model=lm.backbone, keras=info, served=served)


@pytest.fixture(scope="module")
def exports(shared_model_dir, tmp_path_factory, request):
    """`keras_export` and runners/export.py's export of the same model directory
    (`build_runner_export`, made once per run as well, before this fixture waits for
    `keras_export`'s, which another xdist worker may be building meanwhile): per export, its
    info and what the session loader gives."""
    with read_only_dir(tmp_path_factory, "causal_lm_runner_export",
                       lambda root: build_runner_export(root, shared_model_dir)) as runner_root:
        runner, served = recorded_export(runner_root, "runner")
        keras_export = request.getfixturevalue("keras_export")
        yield dict(keras_export, runner=runner,
                   served={"keras": keras_export["served"], "runner": served})


def test_session_loaded_export_generates_as_generate(keras_export):
    ours, _ = keras_export["served"]
    lm = keras_export["lm"]
    model = keras_export["model"]
    out = model(tf.constant([[1, 2, 3], [4, 5, 6]]), mems=model.init_mems(2, 6), mem_len=6,
                clamp_len=5, same_length=True)
    np.testing.assert_allclose(ours["score/log_probs"], out["log_probs"], atol=1e-5)
    rows = [dict(sampler="greedy"), dict(sampler=Sampler(temperature=0.9, top_k=4, top_p=0.9,
                                                         seed=4))]
    for i, (prompt, kw) in enumerate(zip(["w1 w2 w3", "w4 nope w5"], rows)):
        n = len(lm.preprocessor.tokenize(prompt))
        with pytest.warns(UserWarning) if "nope" in prompt else contextlib.nullcontext():
            text = generate(lm, prompt, max_length=n + 8,
                            context=context_of(lm.backbone.config, mem_len=40, clamp_len=5),
                            strip_prompt=True, stop_token_ids=None, **kw)
        assert ours["generate_text/text"][i].decode("utf-8") == text


def test_same_saved_model_as_export_py(exports):
    runner, keras_export = exports["runner"], exports["keras"]
    a, b = info_of(runner["export_path"]), info_of(keras_export["export_path"])
    assert {k: v for k, v in a.items() if k not in PER_EXPORT} == {
        k: v for k, v in b.items() if k not in PER_EXPORT}
    assert b["model_name"] == "txl" and b["version"] == 1
    with open(os.path.join(runner["export_path"], "assets", "vocab.txt"), "rb") as f, \
            open(os.path.join(keras_export["export_path"], "assets", "vocab.txt"), "rb") as g:
        assert f.read() == g.read()
    assert warmup_of(runner["export_path"]) == warmup_of(keras_export["export_path"])
    for name in ("models.config", "batching_parameters.txt"):
        assert os.path.isfile(os.path.join(exports["root"], "keras", "txl", name))
    ours, signatures = exports["served"]["keras"]
    theirs, their_signatures = exports["served"]["runner"]
    assert signatures == their_signatures
    assert sorted(runner["signatures"]) == signatures
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_bad_inputs_give_one_clear_error(keras_export, tmp_path):
    lm = keras_export["lm"]
    cases = [
        (lambda: export(lm, tmp_path / "x", gen_len=3), CausalLMInputError,
         "unknown export setting"),
        (lambda: export(causal_lm(lm.backbone), tmp_path / "x", text_signatures=True),
         CausalLMInputError, "text_signatures=True needs a preprocessor"),
        (lambda: export(lm, tmp_path / "x", limits={"max_seq_len": 3}), CausalLMInputError,
         "limits must be"),
        (lambda: export(lm, os.path.join(keras_export["root"], "keras", "txl"), version=1),
         ExportInputError, "exists; pass --overwrite"),
        (lambda: export(lm, ""), ExportInputError, "export_dir is required"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=message) as error:
            call()
        assert "\n" not in str(error.value)
    assert not os.path.exists(tmp_path / "x")
