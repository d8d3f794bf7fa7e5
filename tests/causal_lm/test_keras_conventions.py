"""keras-hub's conventions on `TransformerXLCausalLM`: compile(sampler=) is generate()'s default
and generate(sampler=) overrides it; generate(stop_token_ids=) ("auto", None, ids) on the graph
loop and the compiled loop; a tf.data.Dataset of prompts equals the list; export() is
keras.Model.export and the TF Serving export has its own name; from_preset(load_weights=False)
builds the preset's model untrained. Bad arguments give one line and change nothing."""
import os

import numpy as np
import pytest
import tensorflow as tf

from causal_lm_support import causal_lm, from_preset, model_dir
from txl_tf.causal_lm import serving_export
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.sampler import Sampler, get_sampler
from txl_tf.generation.text_generation import context_of, generator_of

PROMPTS = np.array([[2, 3, 4], [5, 6, 7]], np.int32)
LENGTH = 24


@pytest.fixture(scope="module")
def word(tmp_path_factory):
    """(model directory, causal LM) of a tiny one-layer word-level model (<eos> and <unk>
    specials): what these tests check (samplers, stop ids, the loops' ends, datasets, exports,
    arguments) does not depend on the stacking of layers."""
    path, _ = model_dir(tmp_path_factory.mktemp("word") / "m", "word", seed=1, mem_len=10,
                        n_layer=1)
    return path, from_preset(path)


def one_line(error):
    assert "\n" not in str(error) and str(error)


def expected_rows(rows, prompt_len, stop):
    """Rows cut after the first generated `stop`, the rest of the row `stop` (computed here,
    token by token)."""
    out = []
    for row in rows.tolist():
        cut = list(row[:prompt_len])
        for token in row[prompt_len:]:
            cut.append(token)
            if token == stop:
                break
        out.append(cut + [stop] * (len(row) - len(cut)))
    return np.array(out, np.int32)


# ------------------------------------------------------------------------------ the sampler
def test_compile_sampler_is_the_default_and_generate_overrides_it(word):
    """On a causal LM of its own (compile changes it) around `word`'s backbone, whose
    generator (kept with the backbone) the other tests trace too."""
    path, shared = word
    lm = causal_lm(shared.backbone, shared.preprocessor)
    greedy = lm.generate(PROMPTS, LENGTH, stop_token_ids=None)
    np.testing.assert_array_equal(
        greedy, lm.generate(PROMPTS, LENGTH, stop_token_ids=None, sampler="greedy"))
    chosen = Sampler(temperature=1.0, top_k=6, seed=5)
    for sampler in ("random", chosen):
        lm.compile(optimizer="adam", sampler=sampler)
        own = lm.generate(PROMPTS, LENGTH, stop_token_ids=None)
        np.testing.assert_array_equal(
            own, lm.generate(PROMPTS, LENGTH, stop_token_ids=None, sampler=sampler))
        assert not np.array_equal(own, greedy)
        np.testing.assert_array_equal(
            lm.generate(PROMPTS, LENGTH, stop_token_ids=None, sampler="greedy"), greedy)
    again = from_preset(path)
    again.compile_from_config(lm.get_compile_config())
    assert again.sampler == chosen


@pytest.mark.parametrize("sampler,message", [
    ("beam", "unknown sampler 'beam'"), (3, "sampler must be a name"),
    (Sampler, "sampler must be a name")])
def test_a_bad_compile_sampler_changes_nothing(word, sampler, message):
    lm = from_preset(word[0])
    lm.compile(optimizer="sgd", sampler="top_p")
    before = (lm.sampler, lm.optimizer, lm.get_compile_config())
    with pytest.raises(CausalLMInputError, match=message) as caught:
        lm.compile(optimizer="adam", sampler=sampler)
    one_line(caught.value)
    assert (lm.sampler, lm.optimizer, lm.get_compile_config()) == before


# ---------------------------------------------------------------------------- stop tokens
@pytest.mark.parametrize("jit_compile", [False, True], ids=["graph_loop", "compiled"])
def test_explicit_stop_ids_cut_each_row_on_both_paths(word, jit_compile):
    """Each row is cut after its first stop id; and the loop ends after the token that stops
    the last row: the raw tokens' columns after the next one are never generated (zeros). All
    of it through the one generator (and XLA program of 2 stop ids) of `lm.generate`. The
    uncut tokens are the graph loop's on both paths (the compiled loop's equal them:
    test_causal_lm_generate.py::test_compiled_generate_equals_the_graph_loop), so the compiled
    case compiles no program without stop ids."""
    lm = word[1]
    free = lm.generate(PROMPTS, LENGTH, None, sampler="random")
    p = PROMPTS.shape[1]
    # Two ids per call (one of them never generated), so that every call with stop ids runs
    # the one XLA program of 2 stop ids.
    never = [int(t) for t in range(23) if t not in free[:, p:]]
    assert len(never) >= 2, "every id was generated: no stop id can be absent"
    for stop in (free[0, p + 2], free[1, p]):  # one row stops later than the other
        got = lm.generate(PROMPTS, LENGTH, [never[0], int(stop)], sampler="random",
                          jit_compile=jit_compile)
        np.testing.assert_array_equal(got, expected_rows(free, p, stop))
        stripped = lm.generate(PROMPTS, LENGTH, (int(stop), never[0]), strip_prompt=True,
                               sampler="random", jit_compile=jit_compile)
        np.testing.assert_array_equal(stripped, got[:, p:])
    absent = lm.generate(PROMPTS, LENGTH, never[:2], sampler="random", jit_compile=jit_compile)
    np.testing.assert_array_equal(absent, free)
    gen = generator_of(lm.backbone, context_of(lm.backbone.config), jit_compile)
    assert gen.jit_compile == jit_compile
    first = [int(free[0, p]), int(free[1, p])]  # every row stops at its first token
    raw = gen.generate(PROMPTS, LENGTH - p, **get_sampler("random").settings(), stop_ids=first)
    np.testing.assert_array_equal(raw[:, 0], first)
    np.testing.assert_array_equal(raw[:, 2:], np.zeros([2, LENGTH - p - 2], np.int32))


def test_auto_stops_at_eos_and_drops_it_from_text(word):
    lm = word[1]
    eos = lm.preprocessor.model_vocab.vocab.id_of("<eos>")
    p = PROMPTS.shape[1]
    seeds = [s for s in range(40)
             if eos in lm.generate(PROMPTS, LENGTH, None, sampler="random", seed=s)[0, p:]]
    assert seeds, "no seed generated <eos>"
    seed = seeds[0]
    free = lm.generate(PROMPTS, LENGTH, None, sampler="random", seed=seed)
    auto = lm.generate(PROMPTS, LENGTH, sampler="random", seed=seed)  # the default: "auto"
    np.testing.assert_array_equal(auto, expected_rows(free, p, eos))
    assert not np.array_equal(auto, free)
    texts = [lm.preprocessor.detokenize(ids) for ids in PROMPTS]
    for text, ids in zip(texts, PROMPTS):
        np.testing.assert_array_equal(lm.preprocessor.tokenize(text), ids)
    out = lm.generate(texts, LENGTH, sampler="random", seed=seed, strip_prompt=True)
    row = free[0, p:].tolist()
    assert out[0] == lm.preprocessor.continuation(PROMPTS[0], row[:row.index(eos)])
    assert lm.generate(texts, LENGTH, None, sampler="random", seed=seed,
                       strip_prompt=True)[0] == lm.preprocessor.continuation(PROMPTS[0], row)
    # A stop token that is text (not a special symbol) stays in the text.
    word_id = row[1]
    kept = lm.generate(texts, LENGTH, [word_id], sampler="random", seed=seed,
                       strip_prompt=True)
    assert kept[0] == lm.preprocessor.continuation(PROMPTS[0], row[:row.index(word_id) + 1])


@pytest.mark.parametrize("level", ["char", "byte"])
def test_auto_without_an_end_of_line_symbol_never_stops(tmp_path, level):
    lm = from_preset(model_dir(tmp_path / level, level, n_layer=1)[0])
    ids = np.array([[1, 2, 3]], np.int32)
    np.testing.assert_array_equal(lm.generate(ids, 12, sampler="random"),
                                  lm.generate(ids, 12, None, sampler="random"))
    no_vocabulary = causal_lm(lm.backbone)
    np.testing.assert_array_equal(no_vocabulary.generate(ids, 12, sampler="random"),
                                  lm.generate(ids, 12, None, sampler="random"))


@pytest.mark.parametrize("stop,message", [
    ("eos", "stop_token_ids must be 'auto', None or token ids"),
    ("top_k", "names a sampler: generate's third argument is stop_token_ids"),
    ([1.5], "an int or a sequence of ints"), ([True], "an int or a sequence of ints"),
    ({"a": 1}, "an int or a sequence of ints"),
    ([23], r"stop_token_ids must be in \[0, 23\)"), (-1, r"must be in \[0, 23\)")])
def test_bad_stop_token_ids_give_one_line(word, stop, message):
    with pytest.raises(CausalLMInputError, match=message) as caught:
        word[1].generate(PROMPTS, LENGTH, stop)
    one_line(caught.value)


# ------------------------------------------------------------------------------- datasets
def test_dataset_prompts_equal_list_prompts(word):
    lm = word[1]
    want = lm.generate(PROMPTS, LENGTH, sampler="top_k")
    ids = tf.data.Dataset.from_tensor_slices(PROMPTS)
    for dataset in (ids, ids.batch(2), ids.batch(1), ids.map(lambda x: tf.cast(x, tf.int64))):
        np.testing.assert_array_equal(lm.generate(dataset, LENGTH, sampler="top_k"), want)
    texts = ["w1 w2 w3", "w4", "w5 w6"]
    want_text = lm.generate(texts, 12, sampler="top_k")
    strings = tf.data.Dataset.from_tensor_slices(texts)
    for dataset in (strings, strings.batch(2)):
        assert lm.generate(dataset, 12, sampler="top_k") == want_text


@pytest.mark.parametrize("make,message", [
    (lambda: tf.data.Dataset.from_tensor_slices({"token_ids": PROMPTS}),
     "a dataset of prompts holds strings"),
    (lambda: tf.data.Dataset.from_tensor_slices(PROMPTS.astype(np.float32)),
     "a dataset of prompts holds strings"),
    (lambda: tf.data.Dataset.from_tensor_slices(PROMPTS[:, :, None]).batch(2),
     "a dataset of prompts holds strings"),
    (lambda: tf.data.Dataset.from_tensor_slices(PROMPTS).take(0), "holds no prompts"),
    (lambda: tf.data.Dataset.from_tensor_slices(PROMPTS).map(lambda x: x[:2]).concatenate(
        tf.data.Dataset.from_tensor_slices(PROMPTS)), "outputs of widths")])
def test_bad_prompt_datasets_give_one_line(word, make, message):
    with pytest.raises(CausalLMInputError, match=message) as caught:
        word[1].generate(make(), None)
    one_line(caught.value)


# -------------------------------------------------------------------------------- export
def test_export_is_keras_model_export(word, tmp_path):
    lm = word[1]
    lm.export(str(tmp_path / "keras"), format="tf_saved_model")
    loaded = tf.saved_model.load(str(tmp_path / "keras"))
    np.testing.assert_allclose(loaded.serve(tf.constant(PROMPTS)).numpy(),
                               lm(PROMPTS).numpy(), atol=1e-5)
    assert not os.path.exists(tmp_path / "keras" / "1")  # no TF Serving version directory


def test_the_serving_export_has_its_own_name_and_format(word, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(serving_export, "export",
                        lambda lm, path, limits, **settings: calls.append((path, settings)))
    lm = word[1]
    lm.export_for_serving(str(tmp_path / "a"), gen_mem_len=8)
    lm.export(str(tmp_path / "b"), format="tf_serving", gen_mem_len=8)
    assert calls == [(str(tmp_path / "a"), {"gen_mem_len": 8}),
                     (str(tmp_path / "b"), {"gen_mem_len": 8})]


@pytest.mark.parametrize("kwargs,message", [
    (dict(format="zip"), "unknown export format 'zip'"),
    (dict(gen_mem_len=8), "gen_mem_len are settings of the TF Serving export"),
    (dict(limits=None, version=2), "limits, version are settings of the TF Serving export")])
def test_bad_export_arguments_give_one_line_and_write_nothing(word, tmp_path, kwargs, message):
    with pytest.raises(CausalLMInputError, match=message) as caught:
        word[1].export(str(tmp_path / "x"), **kwargs)
    one_line(caught.value)
    assert not os.path.exists(tmp_path / "x")


# --------------------------------------------------------------------------- from_preset
def test_from_preset_without_weights_is_the_same_model_untrained(word):
    path, lm = word
    fresh = from_preset(path, load_weights=False)
    assert fresh.backbone.config == lm.backbone.config
    assert fresh.preprocessor.vocabulary_size == lm.preprocessor.vocabulary_size
    assert [w.shape for w in fresh.backbone.weights] == [w.shape for w in lm.backbone.weights]
    assert all(not np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(fresh.backbone.trainable_weights, lm.backbone.trainable_weights)
               if np.std(b.numpy()) > 0)
    assert fresh.generate("w1 w2", 6, None).startswith("w1 w2")


@pytest.mark.parametrize("kwargs,message", [
    (dict(load_weights="no"), "load_weights must be True or False"),
    (dict(load_weights=1), "load_weights must be True or False"),
    (dict(load_weights=False, checkpoint="best"), "load_weights=False reads none")])
def test_bad_from_preset_arguments_give_one_line(word, kwargs, message):
    with pytest.raises(CausalLMInputError, match=message) as caught:
        from_preset(word[0], **kwargs)
    one_line(caught.value)


# ------------------------------------------------------------- every argument, one line
@pytest.mark.parametrize("kwargs,message", [
    (dict(strip_prompt="no"), "strip_prompt must be True or False"),
    (dict(same_length="yes"), "same_length must be True or False"),
    (dict(seg_len="4"), r"seg_len must be an integer in \[1, "),
    (dict(seg_len=0), r"seg_len must be an integer in \[1, "),
    (dict(mem_len=-2), r"mem_len must be an integer in \[1, "),
    (dict(clamp_len=1.5), r"clamp_len must be an integer in \[0, .* or -1"),
    (dict(sampler={"top_k": 2}), "sampler must be a name"),
    (dict(jit_compile="yes"), "jit_compile must be a bool or one of")])
def test_bad_generate_settings_give_one_line(word, kwargs, message):
    with pytest.raises(CausalLMInputError, match=message) as caught:
        word[1].generate(PROMPTS, LENGTH, **kwargs)
    one_line(caught.value)


@pytest.mark.parametrize("path", [None, 3, 2.5, object()], ids=["None", "int", "float", "object"])
@pytest.mark.parametrize("method", ["export", "export_for_serving", "save_to_preset",
                                    "from_preset"])
def test_every_path_argument_that_is_no_path_gives_one_line(word, method, path):
    lm = word[1]
    call = (lambda: type(lm).from_preset(path)) if method == "from_preset" else \
        (lambda: getattr(lm, method)(path))
    with pytest.raises(CausalLMInputError, match="must be a path") as caught:
        call()
    one_line(caught.value)


def test_a_bad_compile_config_sampler_gives_one_line(word):
    lm = from_preset(word[0])
    with pytest.raises(CausalLMInputError, match="a sampler config holds temperature") as caught:
        lm.compile(optimizer="adam", sampler={"top_k": 2, "beams": 3})
    one_line(caught.value)
    assert getattr(lm, "optimizer", None) is None and lm.get_compile_config() is None
