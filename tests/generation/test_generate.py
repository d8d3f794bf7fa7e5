"""Generation: cached decoding equals full re-runs, sampling filters, streaming, the CLI."""
import io
import json

import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from runners import generate
from txl_tf.generation import sampling
from txl_tf.generation.generator import Generator, sampler_tensors
from txl_tf.generation.sampler import Sampler
from txl_tf.model.context_settings import ContextSettings
from tf_records.vocab.model_vocab import write_model_vocab
from tf_records.text.tokenize import TextRules
from tf_records.vocab.vocabulary import Vocabulary

from runner_calls import call_runner
from tiny import tiny_model


def random_model(seed=0, **changes):
    """`tiny_model` with n_token 23, tgt_len and mem_len 4, init_std 0.5, and `changes`."""
    return tiny_model(seed, **{"n_token": 23, "tgt_len": 4, "mem_len": 4, "init_std": 0.5,
                               **changes})


def naive_greedy(model, prompt, num_tokens):
    """Re-runs the model over the whole context (no memory at all) for every token."""
    context = np.asarray(prompt, np.int32)
    out = []
    for _ in range(num_tokens):
        log_probs = model(context, mems=None)["log_probs"][:, -1].numpy()
        token = log_probs.argmax(-1).astype(np.int32)
        out.append(token)
        context = np.concatenate([context, token[:, None]], axis=1)
    return np.stack(out, axis=1)


@pytest.mark.parametrize("prompt_lens,seg_len,clamp_len", [((11, 1), 4, -1), ((3,), 5, 6)])
def test_cached_greedy_generation_equals_full_rerun(prompt_lens, seg_len, clamp_len):
    """With a memory that holds the whole context, the cached graph loop and the stream give
    the greedy tokens of re-running the model over the whole text: prompts of several
    segments, of one token, and shorter than a segment with clamped distances (one Generator
    per setting, its graphs traced once for its prompts)."""
    model = random_model(clamp_len=clamp_len)
    num_tokens = 17
    gen = Generator(model, seg_len=seg_len, mem_len=max(prompt_lens) + num_tokens)
    for prompt_len in prompt_lens:
        prompt = np.random.RandomState(prompt_len).randint(0, 23, size=(2, prompt_len))
        cached = gen.generate(prompt, num_tokens, temperature=0.0)
        expected = naive_greedy(model, prompt, num_tokens)
        np.testing.assert_array_equal(cached, expected)
        assert len(set(expected.ravel().tolist())) > 2  # not a degenerate constant output
        streamed = np.stack(list(gen.stream(prompt, num_tokens, temperature=0.0)), axis=1)
        np.testing.assert_array_equal(streamed, expected)


def test_learned_relative_encoding_generation_equals_full_rerun():
    """attn_type 1 (Shaw et al.): relative distances are the same cached or rerun, including
    those beyond its table (both clamp them to the table's longest distance)."""
    model = random_model(attn_type=1)
    prompt = np.random.RandomState(1).randint(0, 23, size=(2, 6))
    gen = Generator(model, seg_len=4, mem_len=6 + 17)
    np.testing.assert_array_equal(gen.generate(prompt, 17, temperature=0.0),
                                  naive_greedy(model, prompt, 17))


@pytest.mark.parametrize("attn_type", [2, 3])
def test_absolute_encodings_generate_through_their_memory(attn_type):
    """attn_type 2 and 3 generate with the model's memory semantics: the graph loop, the
    streamed tokens and a second run agree, and every id is in the vocabulary."""
    model = random_model(attn_type=attn_type)
    prompt = np.random.RandomState(2).randint(0, 23, size=(2, 5))
    gen = Generator(model, seg_len=4, mem_len=12)
    tokens = gen.generate(prompt, 9, temperature=0.0)
    assert tokens.shape == (2, 9) and tokens.min() >= 0 and tokens.max() < 23
    np.testing.assert_array_equal(gen.generate(prompt, 9, temperature=0.0), tokens)
    streamed = np.stack(list(gen.stream(prompt, 9, temperature=0.0)), axis=1)
    np.testing.assert_array_equal(streamed, tokens)


def test_memory_shorter_than_context_differs_from_full_rerun():
    # The test above can fail: with a memory too short for the context, the cached decode
    # sees less than the re-run does and its logits differ.
    model = random_model()
    prompt = np.random.RandomState(0).randint(0, 23, size=(1, 12))
    gen = Generator(model, seg_len=4, mem_len=3)
    log_probs, mems = gen.consume(tf.constant(prompt, tf.int32),
                                  tf.zeros([2, 1, 0, 16], tf.float32))
    full = model(prompt.astype(np.int32))["log_probs"][:, -1]
    assert mems.shape == (2, 1, 3, 16)
    assert np.abs(log_probs.numpy() - full.numpy()).max() > 1e-4
    gen_long = Generator(model, seg_len=4, mem_len=12)
    log_probs, mems = gen_long.consume(tf.constant(prompt, tf.int32),
                                       tf.zeros([2, 1, 0, 16], tf.float32))
    np.testing.assert_allclose(log_probs.numpy(), full.numpy(), atol=1e-5)
    assert mems.shape == (2, 1, 12, 16)


def test_sampling_is_seeded_and_streaming_matches_graph_loop():
    """Seeded top-k / top-p sampling: the graph loop, the stream and a second run give the same
    tokens, another seed others (one layer: the sampling is what differs from the greedy tests
    above)."""
    model = random_model(1, n_layer=1)
    prompt = np.random.RandomState(5).randint(0, 23, size=(3, 6))
    gen = Generator(model, mem_len=40)
    settings = dict(temperature=1.3, top_k=8, top_p=0.9, seed=7)
    a = gen.generate(prompt, 20, **settings)
    b = np.stack(list(gen.stream(prompt, 20, **settings)), axis=1)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, gen.generate(prompt, 20, **settings))
    assert (gen.generate(prompt, 20, **{**settings, "seed": 8}) != a).any()
    assert gen.generate(prompt, 0).shape == (3, 0)
    assert gen.generate(prompt, 1).shape == (3, 1)


def test_filter_logits_against_numpy():
    rng = np.random.RandomState(0)
    log_probs = tf.nn.log_softmax(rng.normal(size=(4, 30)).astype(np.float32) * 2).numpy()
    for temperature, top_k, top_p in [(1.0, 5, 1.0), (0.7, 0, 0.8), (2.0, 10, 0.5),
                                      (1.0, 0, 1.0), (1.0, 100, 0.999)]:
        got = sampling.filter_logits(log_probs, temperature, top_k, top_p).numpy()
        for row, out in zip(log_probs, got):
            logits = row / temperature
            keep = np.ones(30, bool)
            if 0 < top_k < 30:
                keep &= logits >= np.sort(logits)[::-1][top_k - 1]
            if top_p < 1.0:
                masked = np.where(keep, logits, -np.inf)
                order = np.argsort(-masked)
                probs = np.exp(masked[order] - masked[order].max())
                probs /= probs.sum()
                before = np.cumsum(probs) - probs
                nucleus = np.zeros(30, bool)
                nucleus[order[before < top_p]] = True
                keep &= nucleus
            np.testing.assert_array_equal(np.isfinite(out), keep)
            np.testing.assert_allclose(out[keep], logits[keep], rtol=1e-6)
    # sampled tokens stay inside the top-k set; greedy is the argmax
    chosen = [sampling.choose(log_probs, t, Sampler(1.0, 3, 1.0, 0)).numpy() for t in range(50)]
    top3 = np.argsort(-log_probs, axis=-1)[:, :3]
    assert all(np.isin(c[i], top3[i]) for c in chosen for i in range(4))
    np.testing.assert_array_equal(sampling.choose(log_probs, 0, Sampler(0.0, 0, 1.0, 0)),
                                  log_probs.argmax(-1))


# ------------------------------------------------------------------------------------------
def word_model_dir(path, n_token=23):
    """A word-level model directory of a one-layer `random_model` (what runners/generate.py
    reads and prints; generation through stacked layers: the tests above)."""
    model = random_model(n_token=n_token, mem_len=6, n_layer=1)
    txl_tf.save_model(model, str(path))
    vocab = Vocabulary(["<eos>"] + [f"w{i}" for i in range(n_token - 1)], "word",
                       specials=["<eos>"])
    write_model_vocab(str(path), vocab, TextRules("word", eos="<eos>"))
    return model


@pytest.fixture(scope="module")
def word_model(tmp_path_factory):
    """(path, model): a word-level model directory of `word_model_dir`, shared read only by the
    tests of runners/generate.py (which writes nothing into it)."""
    path = tmp_path_factory.mktemp("word") / "m"
    return str(path), word_model_dir(path)


def gen_flags(**kw):
    base = dict(model_dir=None, prompt=None, prompt_file=None, vocab_file=None, num_tokens=10,
                temperature=0.0, top_k=0, top_p=1.0, seed=0, seg_len=None, mem_len=40,
                clamp_len=None, same_length=False, stream=True, checkpoint="latest",
                output_ids=True)
    base.update(kw)
    return generate.GenerateOptions(**base)


def test_run_streams_text_and_reports_json(word_model):
    path, model = word_model
    out = io.StringIO()
    result = generate.run(gen_flags(model_dir=path, prompt="w1 w2\nw3 w4",
                                    num_tokens=12), out=out)
    # prompt ids: w1 w2 <eos> w3 w4 (the last line continues: no <eos>)
    expected = naive_greedy(model, np.array([[2, 3, 0, 4, 5]]), 12)[0]
    assert result["ids"] == expected.tolist() and result["prompt_tokens"] == 5
    vocab = ["<eos>"] + [f"w{i}" for i in range(22)]
    words = [vocab[i] for i in expected]
    text = ""
    for i, w in enumerate(words):
        text += "\n" if w == "<eos>" else (("" if i and words[i - 1] == "<eos>" else " ") + w)
    assert out.getvalue() == "w1 w2\nw3 w4" + text + "\n" and "text" not in result
    same = generate.run(gen_flags(model_dir=path, prompt="w1 w2\nw3 w4",
                                  num_tokens=12, stream=False), out=io.StringIO())
    assert same["ids"] == result["ids"] and same["jit_compile"] is False  # auto: off on CPU
    compiled = generate.run(gen_flags(model_dir=path, prompt="w1 w2\nw3 w4",
                                      num_tokens=12, stream=False, jit_compile="true"),
                            out=io.StringIO())
    assert compiled["ids"] == result["ids"] and compiled["jit_compile"] is True
    with pytest.raises(generate.GenerateInputError, match="--jit_compile must be one of"):
        generate.run(gen_flags(model_dir=path, prompt="w1", jit_compile="on"),
                     out=io.StringIO())


def test_generate_bad_input_and_cli(word_model, tmp_path):
    path, _ = word_model
    from tf_records.errors import VocabularyError
    with pytest.raises(VocabularyError, match="'dog'"):
        generate.run(gen_flags(model_dir=path, prompt="w1 dog"), io.StringIO())
    with pytest.raises(generate.GenerateInputError, match="no tokens"):
        generate.run(gen_flags(model_dir=path, prompt="   "), io.StringIO())
    with pytest.raises(txl_tf.ModelDirError):
        generate.run(gen_flags(model_dir=str(tmp_path / "none"), prompt="w1"), io.StringIO())
    # runners/generate.py's main in this process (its start-up as a process:
    # tests/runners/test_checkpoint_choice.py)
    proc = call_runner("generate", [f"--model_dir={path}", "--prompt=w1 w2 w3", "--num_tokens=5",
                                    "--temperature=0.8", "--top_k=5", "--seed=3"])
    assert proc.returncode == 0, proc.stderr
    # the continuation for people, then a compact JSON line: no text, ids only with --output_ids
    continuation, line = proc.stdout.rstrip("\n").rsplit("\n", 1)
    result = json.loads(line)
    assert result["tokens"] == 5 and "ids" not in result and "text" not in result
    assert continuation.split() and set(continuation.split()) <= {f"w{i}" for i in range(22)}
    assert result["checkpoint_name"] == "latest" and result["checkpoint"].endswith("ckpt-1")
    proc = call_runner("generate", [f"--model_dir={path}", "--prompt=w1 cat"])
    assert proc.returncode == 2 and "unknown word symbol 'cat'" in proc.stderr


def test_each_new_token_is_one_forward_pass_of_length_one():
    from txl_tf.generation import graph_loop
    model = random_model()
    prompt = tf.constant(np.random.RandomState(1).randint(0, 23, size=(2, 9)), tf.int32)
    calls = []
    original = model.call

    def counting_call(tokens, *args, **kwargs):
        calls.append(int(tokens.shape[1]))
        return original(tokens, *args, **kwargs)

    model.call = counting_call
    try:
        context = ContextSettings(tgt_len=4, mem_len=100, clamp_len=-1, same_length=False)
        log_probs, mems = graph_loop.consume_prompt(
            model, prompt, graph_loop.empty_mems(model.config, 2), context)
        assert mems.shape == (2, 2, 9, 16)
        traced = len(calls)
        tokens, mems = graph_loop.decode(model, log_probs, mems, 6, Sampler(temperature=0.0),
                                         context)
    finally:
        del model.call
    # eager while_loop: 3 prompt segments (4 + 4 + 1 tokens), then 5 passes of one token each
    assert calls[:traced] == [4, 4, 1] and calls[traced:] == [1] * 5
    assert tokens.shape == (2, 6) and mems.shape == (2, 2, 9 + 5, 16)


@pytest.mark.parametrize("level", ["char", "byte"])
def test_run_prints_the_prompt_then_the_continuation_for_char_and_byte_models(tmp_path, level):
    from tf_records.text.tokenize import decode_ids
    if level == "char":
        vocab = Vocabulary(list("abcdefghij klmnopqrstuvwxyz\u00e9"), "char")
    else:
        vocab = Vocabulary.all_bytes()
    rules = TextRules(level)
    model = random_model(n_token=len(vocab), mem_len=6, n_layer=1)
    txl_tf.save_model(model, str(tmp_path / "m"))
    write_model_vocab(str(tmp_path / "m"), vocab, rules)
    out = io.StringIO()
    result = generate.run(gen_flags(model_dir=str(tmp_path / "m"), prompt="caf\u00e9 ab",
                                    num_tokens=9, temperature=1.0, seed=4), out=out)
    prompt = vocab.encode(b"caf\xc3\xa9 ab" if level == "byte" else "caf\u00e9 ab")
    assert result["prompt_tokens"] == len(prompt)
    full = decode_ids(np.concatenate([prompt, result["ids"]]), rules, vocab)
    text = out.getvalue()
    assert text.startswith("caf\u00e9 ab") and text.endswith("\n")
    text = text[len("caf\u00e9 ab"):]
    if level == "char":
        assert text[:-1] == full[len("caf\u00e9 ab"):] == decode_ids(result["ids"], rules, vocab)
    else:  # bytes print as UTF-8 once complete; invalid sequences become U+FFFD
        assert text[:-1] == bytes(result["ids"]).decode("utf-8", errors="replace")


def test_per_row_settings_equal_each_row_alone():
    """Settings given per row ([B]) filter and sample every row as that row alone with scalar
    settings, whatever its position in the batch (the export's batch-major generate)."""
    rng = np.random.RandomState(1)
    log_probs = tf.nn.log_softmax(rng.normal(size=(4, 30)).astype(np.float32) * 2).numpy()
    temperature = np.array([0.0, 0.7, 1.3, 2.0], np.float32)
    top_k = np.array([0, 5, 3, 0], np.int32)
    top_p = np.array([1.0, 0.8, 1.0, 0.5], np.float32)
    seed = np.array([1, 2, 3, 4], np.int64)
    filtered = sampling.filter_logits(log_probs, temperature, top_k, top_p).numpy()
    for step in range(5):
        chosen = sampling.choose(log_probs, step,
                                 sampler_tensors(temperature, top_k, top_p, seed)).numpy()
        reversed_rows = sampling.choose(log_probs[::-1], step, sampler_tensors(
            temperature[::-1], top_k[::-1], top_p[::-1], seed[::-1])).numpy()
        for b in range(4):
            row = (log_probs[b:b + 1], temperature[b], top_k[b], top_p[b])
            np.testing.assert_array_equal(filtered[b], sampling.filter_logits(*row).numpy()[0])
            alone = sampling.choose(row[0], step, sampler_tensors(*row[1:], seed[b])).numpy()
            assert chosen[b] == alone[0] == reversed_rows[3 - b]
    assert chosen[0] == log_probs[0].argmax()  # temperature 0: greedy
