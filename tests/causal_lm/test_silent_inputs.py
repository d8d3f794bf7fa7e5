"""Inputs that were accepted silently, wrapped modulo 2^32, ran without bound or ended in a
traceback at the Keras API and the library entries: each now gives one clear line (a
`CausalLMInputError` / the library's error without a newline) or is refused before any work.

The expected behaviour is computed independently where there is a number: the weights of the
model are compared before and after a refused call, and the bounds are the documented constants.
"""
import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from causal_lm_support import (WORDS, causal_lm, from_preset, model_dir, preprocessor_of,
                               vocabulary)
from tf_records.text.tokenize import TextRules
from tf_records.vocab.model_vocab import write_model_vocab
from tf_records.vocab.vocabulary import Vocabulary
from tiny import tiny_model
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.sampler import Sampler
from txl_tf.generation.generator import Generator
from txl_tf.generation.call_bounds import INT32_MAX, MAX_NEW_TOKENS
from txl_tf.model.context_settings import ContextSettings
from txl_tf.serving.module import ServingModule
from txl_tf.serving.serving_settings import ServingSettings
from txl_tf.storage.text_files import read_text_file


def one_line(error):
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("silent")
    two, _ = model_dir(root / "two", n_layer=2)
    one, _ = model_dir(root / "one", n_layer=1)
    return {"root": root, "two": two, "one": one}


@pytest.fixture(scope="module")
def lm(dirs):
    """The causal LM of the one-layer directory: the calls it refuses or generates with do not
    depend on the stacking of layers."""
    return from_preset(dirs["one"])


# -- weights of another configuration ----------------------------------------------------------
def test_checkpoint_of_two_layers_is_refused_by_a_one_layer_config(dirs, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(dirs["two"], mixed)
    shutil.copy(os.path.join(dirs["one"], "config.json"), mixed / "config.json")
    with pytest.raises(txl_tf.ModelDirError, match=r"holds the weights of 2 layers but a model "
                       r"of .*config.json \(n_layer 1"):
        txl_tf.load_model(str(mixed))
    assert txl_tf.load_model(dirs["two"]).config.n_layer == 2  # the matching pair still loads


def test_preset_weights_of_two_layers_are_refused_by_a_one_layer_config(dirs, lm, tmp_path):
    from_preset(dirs["two"]).save_to_preset(str(tmp_path / "p2"))
    lm.save_to_preset(str(tmp_path / "p1"))
    shutil.copy(tmp_path / "p2" / "model.weights.h5", tmp_path / "p1" / "model.weights.h5")
    with pytest.raises(CausalLMInputError, match=r"model.weights.h5 holds the weights of 2 "
                       r"layers but a model of .*p1/config.json \(n_layer 1") as caught:
        from_preset(str(tmp_path / "p1"))
    one_line(caught.value)
    assert from_preset(str(tmp_path / "p2")).backbone.config.n_layer == 2


def test_foreign_vocabulary_of_the_same_size_is_refused(dirs, tmp_path):
    foreign = Vocabulary(WORDS[:2] + WORDS[:1:-1], "word", specials=["<eos>", "<unk>"],
                         unk_symbol="<unk>", unk_policy="unk")
    assert len(foreign) == len(WORDS) and foreign.checksum() != vocabulary("word")[0].checksum()
    write_model_vocab(str(tmp_path), foreign, TextRules("word", eos="<eos>"), dataset="tiny",
                      specials=foreign.specials, unk_symbol="<unk>", unk_policy="unk")
    with pytest.raises(CausalLMInputError, match=r"checksum .* was trained with"):
        from_preset(dirs["two"], preprocessor=preprocessor_of(tmp_path))
    from_preset(dirs["two"], preprocessor=preprocessor_of(dirs["one"]))  # the same vocabulary


# -- generate: 64-bit values, bounds, text -----------------------------------------------------
GENERATE_CASES = [  # (id, inputs, keyword arguments, regex of the one line)
    ("max_length_wraps", [[3, 4]], dict(max_length=2**32 + 6), r"asks for 4,294,967,300 new"),
    ("max_length_unbounded", [[3, 4]], dict(max_length=10**9),
     rf"generate at most {MAX_NEW_TOKENS:,} per call"),
    ("top_k_wraps", [[3, 4]], dict(sampler=lambda: Sampler(top_k=2**32 + 1)),
     rf"top_k must be an integer in \[0, {INT32_MAX}\]"),
    ("seed_beyond_int64", [[3, 4]], dict(seed=2**70), r"seed must be an integer in"),
    ("ids_int64_wrap", np.array([[2**32 + 1]], np.int64), dict(max_length=4),
     r"token ids must be in \[0, 23\).*got 4294967297"),
    ("tensor_not_utf8", tf.constant([b"w1 \xff"]), dict(max_length=4),
     r"not UTF-8 text \(byte 0xff at offset 3\)"),
    ("lone_surrogate", "w1 \udcff", dict(max_length=4), r"lone surrogate"),
]


@pytest.mark.parametrize("inputs,kwargs,pattern", [c[1:] for c in GENERATE_CASES],
                         ids=[c[0] for c in GENERATE_CASES])
def test_generate_refuses_in_one_line(lm, inputs, kwargs, pattern):
    with pytest.raises(CausalLMInputError, match=pattern) as caught:
        lm.generate(inputs, **{k: v() if callable(v) else v for k, v in kwargs.items()})
    one_line(caught.value)


def test_generate_of_a_scalar_string_tensor(lm):
    assert lm.generate(tf.constant("w1 w2"), max_length=4) == lm.generate("w1 w2", max_length=4)


@pytest.mark.parametrize("args,pattern", [
    ((np.array([[2**32 + 1]]), 3), r"prompt ids must be in \[0, 23\)"),
    ((np.array([[1]]), 2**32 + 3), r"num_tokens must be an integer in \[0, 1000000\]"),
    ((np.array([[1.0]]), 3), r"prompt ids must be integers"),
    ((np.array([[1]]), 3, 1.0, 2**32 + 1), r"top_k must be an integer"),
])
def test_generator_checks_before_the_int32_cast(lm, args, pattern):
    with pytest.raises(ValueError, match=pattern):
        Generator(lm.backbone).generate(*args)


# -- fit / evaluate ----------------------------------------------------------------------------
def _dataset(inputs, labels):
    return tf.data.Dataset.from_tensor_slices(
        {"inputs": np.asarray(inputs), "labels": np.asarray(labels)}).batch(2, drop_remainder=True)


# scoring: tgt_len 4, mem_len 6, no clamping, same_length off; generation: mem 8, segments of 4
SETTINGS = ServingSettings(ContextSettings(4, 6, -1, False), gen_mem_len=8, gen_seg_len=4)
GOOD = np.arange(24).reshape(4, 6) % 50
FIT_CASES = [  # (id, inputs, labels, regex)
    ("float_ids", GOOD.astype(np.float32), GOOD, r"inputs are float32; token ids and labels "
                                                 r"must be integers"),
    ("float_labels", GOOD, GOOD.astype(np.float64), r"labels are float64"),
    ("all_labels_negative", GOOD, -np.ones_like(GOOD), r"a batch has no counted label"),
    ("ids_out_of_range", GOOD + 45, GOOD, r"input ids must be in \[0, 50\).*got min 45 max 56"),
    ("ids_int64_wrap", GOOD.astype(np.int64) + 2**32, GOOD,
     r"input ids must be in \[0, 50\).*got min 4294967296"),
    ("labels_out_of_range", GOOD, GOOD + 100, r"labels must be below 50.*got max 111"),
]


@pytest.fixture(scope="module")
def compiled():
    """A compiled causal LM of a one-layer `tiny_model(n_token=50)` that the refusals and the
    good batches share (its train step traced once): each refusal checks that its refused call
    left the weights as it found them."""
    model = causal_lm(tiny_model(n_token=50, n_layer=1))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    return model


@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize("inputs,labels,pattern", [c[1:] for c in FIT_CASES],
                         ids=[c[0] for c in FIT_CASES])
def test_fit_and_evaluate_refuse_bad_batches_in_one_line(compiled, method, inputs, labels,
                                                         pattern):
    model = compiled
    before = [w.numpy().copy() for w in model.backbone.weights]
    with pytest.raises(CausalLMInputError, match=pattern) as caught:
        getattr(model, method)(_dataset(inputs, labels), verbose=0)
    one_line(caught.value)
    for old, new in zip(before, model.backbone.weights):
        np.testing.assert_array_equal(old, new.numpy())  # no step was applied


def test_fit_still_trains_on_good_batches_with_padding(compiled):
    """The refusals' model (its step traced once for the module) trains on good batches."""
    model = compiled
    before = [w.numpy().copy() for w in model.backbone.weights]
    labels = GOOD.copy()
    labels[0, :3] = -1  # some padding: counted labels remain
    history = model.fit(_dataset(GOOD, labels), verbose=0).history
    assert np.isfinite(history["loss"][0]) and history["loss"][0] > 0
    assert any(not np.array_equal(old, new.numpy())
               for old, new in zip(before, model.backbone.weights))  # a step was applied


# -- serving: NaN / Inf memory -----------------------------------------------------------------
@pytest.fixture(scope="module")
def serving():
    """A `ServingModule` of a tiny one-layer model (20 ids), its signatures traced once for the
    module."""
    return ServingModule(tiny_model(n_token=20, tgt_len=4, n_layer=1), SETTINGS)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_serving_refuses_non_finite_memory(serving, bad):
    module = serving
    score = module.signatures()["score"]
    mems = module.signatures()["init_mems"](streams=tf.zeros([1], tf.int32))["mems"].numpy()
    tokens = tf.constant([[1, 2]], tf.int32)
    assert np.isfinite(score(tokens=tokens, mems=mems)["log_probs"].numpy()).all()
    mems[0, 0, 0, 0] = bad
    with pytest.raises(tf.errors.InvalidArgumentError, match="mems hold NaN or Inf values"):
        score(tokens=tokens, mems=mems)


# -- files a user names ------------------------------------------------------------------------
def test_read_text_file_refuses_devices_pipes_large_and_non_utf8(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "big").write_bytes(b"a" * 101)
    (tmp_path / "latin1").write_bytes("caf\u00e9".encode("latin-1"))
    (tmp_path / "ok").write_text("caf\u00e9\n", encoding="utf-8")
    cases = [("/dev/zero", r"is a character device, not a regular file"),
             (str(fifo), r"is a named pipe \(FIFO\), not a regular file"),
             (str(tmp_path / "big"), r"is larger than"),
             (str(tmp_path / "latin1"), r"not UTF-8 text \(byte 0xe9 at offset 3\)")]
    for path, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            read_text_file(path, path, max_bytes=100)
    assert read_text_file(str(tmp_path / "ok"), "ok") == "caf\u00e9\n"


@pytest.mark.parametrize("content,pattern", [
    (b'{"n_token": 23, "x\xe9": 1}', r"config.json is not UTF-8 text \(byte 0xe9"),
    (b'{"n_token": 23,', r"config.json: TransformerXLConfig: not valid JSON"),
    (json.dumps({"n_token": 23, "n_layer": 100000}).encode(),
     r"n_layer must be an integer in \[1, 1024\]"),
    (json.dumps({"n_token": 2**32 + 1}).encode(),
     r"n_token must be an integer in \[1, 2147483647\]"),
])
def test_config_json_errors_name_the_file(dirs, tmp_path, content, pattern):
    shutil.copytree(dirs["two"], tmp_path / "m")
    (tmp_path / "m" / "config.json").write_bytes(content)
    with pytest.raises((ValueError, OSError), match=pattern) as caught:
        txl_tf.load_config(str(tmp_path / "m"))
    one_line(caught.value)
    with pytest.raises(CausalLMInputError, match=r"cannot load .*" + pattern):
        from_preset(str(tmp_path / "m"))


@pytest.mark.parametrize("level", ["word", "byte"])
def test_serving_text_that_is_not_utf8(tmp_path, level):
    """A word (or char) model refuses texts that are not UTF-8 instead of scoring replacement
    characters; a byte model reads any bytes."""
    import tensorflow_text  # noqa: F401  (the graph's byte splitter)
    from tf_records.text.graph import GraphText
    from tf_records.vocab.model_vocab import ModelVocab

    vocab, rules = vocabulary(level)
    write_model_vocab(str(tmp_path), vocab, rules)
    mv = ModelVocab(vocab, rules, {}, str(tmp_path / "vocab.txt"))
    module = ServingModule(tiny_model(n_token=len(vocab), tgt_len=4, n_layer=1), SETTINGS,
                           vocab_file=mv.vocab_path, text_codec=GraphText(mv))
    score_text = module.signatures()["score_text"]
    good = score_text(text=tf.constant([b"w1 w2 w3"]))
    assert np.isfinite(good["loss"].numpy()).all()
    bad = tf.constant([b"w1 w2 \xff w3"])
    if level == "byte":
        assert np.isfinite(score_text(text=bad)["loss"].numpy()).all()
    else:
        with pytest.raises(tf.errors.InvalidArgumentError, match="a text of the request is not "
                                                                 "UTF-8"):
            score_text(text=bad)


@pytest.mark.parametrize("method,name", [("export", "filepath"),
                                         ("export_for_serving", "export_dir"),
                                         ("save_to_preset", "preset_dir")])
def test_non_utf8_output_paths_are_refused_before_anything_is_written(lm, tmp_path, method,
                                                                      name):
    path = os.path.join(str(tmp_path), os.fsdecode(b"out\xff"))
    with pytest.raises(CausalLMInputError, match=rf"{name}=.*out\\xff is not UTF-8"):
        getattr(lm, method)(path)
    assert os.listdir(tmp_path) == []
