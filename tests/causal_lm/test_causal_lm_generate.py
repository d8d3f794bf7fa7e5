"""`txl_tf.generation.text_generation.generate`: strings in and out, ids in and out, equal to
runners/generate.py run as a user runs it on the same model directory, seed and settings;
prompts of different lengths in one call equal each prompt alone; bad inputs give one error."""
import contextlib
import json

import numpy as np
import pytest

from causal_lm_support import causal_lm, from_preset, model_dir
from runner_calls import call_runner
from txl_tf.causal_lm.errors import CausalLMInputError
from txl_tf.generation.text_generation import context_of, generate, generator_of
from txl_tf.generation.sampler import Sampler
from txl_tf.generation.generator import Generator
from txl_tf.model.context_settings import ContextSettings


@pytest.fixture(scope="module")
def trained(trained_byte_model):
    """(model directory, causal LM) of the shared trained byte-level model (read only)."""
    return trained_byte_model["model"], from_preset(trained_byte_model["model"])


@pytest.fixture(scope="module")
def byte(tmp_path_factory):
    """(model directory, model, causal LM of the directory) of a random tiny one-layer
    byte-level model, shared read only by the tests that generate from it or refuse its inputs
    (the two-layer models: `test_text_levels_equal_generate_py`)."""
    path, model = model_dir(tmp_path_factory.mktemp("byte") / "m", "byte", n_layer=1)
    return path, model, from_preset(path)


def generate_py(model, prompt, num_tokens, **flags):
    """(printed continuation, generated ids) of runners/generate.py's main (which prints the
    prompt first), run in this process (`call_runner`: the same flags, model loading and
    output; generate.py started as a process: tests/runners/test_checkpoint_choice.py)."""
    args = [f"--model_dir={model}", f"--prompt={prompt}", f"--num_tokens={num_tokens}",
            "--output_ids"] + [f"--{k}={v}" for k, v in flags.items()]
    proc = call_runner("generate", args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text, _, last = proc.stdout.rstrip("\n").rpartition("\n")
    assert text.startswith(prompt), (prompt, text)
    return text[len(prompt):], json.loads(last)["ids"]


SAMPLED = dict(temperature=0.8, top_k=40, top_p=0.95, seed=7)


@pytest.mark.parametrize("settings", [dict(temperature=0.0), SAMPLED], ids=["greedy", "sampled"])
def test_text_equals_generate_py_on_a_trained_model(trained, settings):
    path, lm = trained
    prompt, num_tokens = "def main(argv):\n    ", 24
    text, ids = generate_py(path, prompt, num_tokens, **settings)
    sampler = Sampler(**{"seed": 0, **settings})
    prompt_ids = lm.preprocessor.tokenize(prompt)
    out = generate(lm, [prompt], max_length=len(prompt_ids) + num_tokens, sampler=sampler)
    assert out == [prompt + text]
    assert generate(lm, prompt, max_length=len(prompt_ids) + num_tokens, sampler=sampler,
                    strip_prompt=True) == text
    got = generate(lm, prompt_ids[None], max_length=len(prompt_ids) + num_tokens,
                   sampler=sampler)
    np.testing.assert_array_equal(got, np.concatenate([prompt_ids, ids])[None])


@pytest.mark.parametrize("level,prompt", [("word", "w3 w4 nope\nw5"), ("char", "abc dé")])
def test_text_levels_equal_generate_py(tmp_path, level, prompt):
    """Word level with <unk> and <eos> (an unknown word, a line end), char level."""
    path, _ = model_dir(tmp_path / level, level, mem_len=12)
    text, ids = generate_py(path, prompt, 9, **SAMPLED, mem_len=12)
    lm = from_preset(path)
    n = len(lm.preprocessor.tokenize(prompt))
    with pytest.warns(UserWarning, match="not in the vocabulary") if level == "word" else \
            contextlib.nullcontext():
        out = generate(lm, prompt, max_length=n + 9, sampler=Sampler(**SAMPLED),
                       context=context_of(lm.backbone.config, mem_len=12), strip_prompt=True,
                       stop_token_ids=None)  # generate.py never stops
    assert out == text
    assert len(ids) == 9


def test_prompts_of_different_lengths_equal_each_alone(tmp_path):
    path, model = model_dir(tmp_path / "m", "word", mem_len=10, n_layer=1)
    lm = from_preset(path)
    prompts = ["w1 w2 w3", "w4", "w5 w6 w7", "w8 w9"]
    sampler = Sampler(temperature=1.0, top_k=5, seed=3)
    together = generate(lm, prompts, max_length=9, sampler=sampler, stop_token_ids=None)
    alone = [generate(lm, p, max_length=9, sampler=sampler, stop_token_ids=None)
             for p in prompts]
    assert together == alone
    # The ids come from the Generator of generate.py (the one implementation), row by row.
    gen = Generator(model, mem_len=None)
    for text, out in zip(prompts, together):
        ids = lm.preprocessor.tokenize(text)
        tokens = gen.generate(ids[None], 9 - len(ids), **sampler.settings())[0]
        assert out == text + lm.preprocessor.continuation(ids, tokens)


def test_ids_in_ids_out_shapes(byte):
    _, model, lm = byte
    batch = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    out = generate(lm, batch, max_length=7, sampler="greedy")
    assert out.shape == (2, 7) and out.dtype == np.int32
    np.testing.assert_array_equal(out[:, :3], batch)
    expected = Generator(model).generate(batch, 4, temperature=0.0)
    np.testing.assert_array_equal(out[:, 3:], expected)
    single = generate(lm, [1, 2, 3], max_length=7, strip_prompt=True)
    np.testing.assert_array_equal(single, expected[0])


@pytest.mark.parametrize("inputs,kwargs,message", [
    ([], {}, "generate takes a prompt string"),
    ([[1, 2], [3]], {}, "generate takes a prompt string"),
    (np.zeros([1, 0], np.int32), {}, "generate takes a prompt string"),
    (np.array([[1, 300]]), {}, r"token ids must be in \[0, 256\)"),
    ("", {}, "has no tokens"),
    ("abc", {"max_length": 2}, "max_length=2 is shorter than the longest prompt"),
    ("abc", {"max_length": 4.5}, "max_length must be an int"),
    ("abc", {"sampler": "beam"}, "unknown sampler 'beam'"),
    ("abc", {"sampler": 3}, "sampler must be a name"),
    ("abc", {"context": ContextSettings(tgt_len=4, mem_len=0)}, "mem_len >= 1"),
])
def test_bad_inputs_give_one_clear_error(byte, inputs, kwargs, message):
    lm = byte[2]
    with pytest.raises(CausalLMInputError, match=message) as error:
        generate(lm, inputs, **kwargs)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("settings,message", [
    (dict(temperature=-1.0), "temperature must be"), (dict(top_k=-2), "top_k must be"),
    (dict(top_p=0.0), "top_p must be"), (dict(seed="x"), "seed must be an int")])
def test_bad_sampler_settings(settings, message):
    with pytest.raises(CausalLMInputError, match=message):
        Sampler(**settings)


def test_text_without_a_preprocessor_is_refused(byte):
    model = byte[1]
    with pytest.raises(CausalLMInputError, match="no preprocessor to read text"):
        generate(causal_lm(model), "abc", max_length=5)


def test_compiled_generate_equals_the_graph_loop(byte):
    """jit_compile=True (one XLA program per batch, prompt bucket and output bucket) gives the
    graph loop's ids and text, for prompts of different lengths (grouped by length, each group
    padded to its bucket). Every call here runs one XLA program (batch 2, prompts of 5 and 6
    bytes in the segment of 6 padded to 8, 9 and 10 tokens in a buffer of 16): the ids' and
    the two groups of the texts, interleaved ("hello", "world": 5 bytes; "hello!", "world!":
    6)."""
    lm = byte[2]
    assert lm.backbone.config.tgt_len == 6  # the prompt segment the buckets above assume
    sampler = Sampler(temperature=0.9, top_k=20, top_p=0.9, seed=3)
    ids = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], np.int32)
    for chosen in ("greedy", sampler):
        np.testing.assert_array_equal(
            generate(lm, ids, max_length=15, sampler=chosen, jit_compile=True),
            generate(lm, ids, max_length=15, sampler=chosen, jit_compile="false"))
    texts = ["hello", "hello!", "world", "world!"]
    assert (generate(lm, texts, max_length=15, sampler=sampler, jit_compile="true")
            == generate(lm, texts, max_length=15, sampler=sampler, jit_compile=False))
    compiled = generator_of(lm.backbone, context_of(lm.backbone.config), True).compiled
    assert compiled.experimental_get_tracing_count() == 1
    with pytest.raises(CausalLMInputError, match="jit_compile must be a bool or one of"):
        generate(lm, ids, max_length=15, jit_compile="yes")


def test_predict_is_refused_with_what_to_use(byte):
    lm = byte[2]
    with pytest.raises(CausalLMInputError, match="predict\\(\\) does not carry the memory") as e:
        lm.predict(np.zeros([2, 4], np.int32))
    assert "\n" not in str(e.value) and "evaluate()" in str(e.value)
    assert "return_memory=True" in str(e.value)
