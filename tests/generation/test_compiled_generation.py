"""Generation compiled whole by XLA: the fixed memory's loop gives the graph loop's tokens, is
traced once per bucket, and samples from the filtered distribution."""
import numpy as np
import pytest
import tensorflow as tf

from txl_tf.generation import buckets, sampling
from txl_tf.generation.generator import Generator, sampler_fields, sampler_tensors
from txl_tf.devices.step_compilation import choose_generation

from tiny import tiny_model


def random_model(seed=0, **changes):
    return tiny_model(seed, **{"n_token": 23, "tgt_len": 4, "mem_len": 4, "init_std": 0.5,
                               **changes})


GREEDY = dict(temperature=0.0)
SAMPLED = dict(temperature=1.3, top_k=8, top_p=0.9, seed=7)


@pytest.mark.parametrize("attn_type", [1, 3])
def test_compiled_equals_graph_loop(attn_type):
    """Greedy and seeded top-k / top-p tokens of the XLA program (fixed memory, padded prompt
    and buffer) equal those of the graph loop (growing memory) for every attention variant: a
    prompt of 3 segments (the last one padded) with a memory shorter than the context
    (attn_type 2, and a prompt shorter than a segment with a memory longer than the context:
    `test_compiled_generation_is_traced_once_per_bucket`; attn_type 0, the default, with a
    prompt of one segment and a memory shorter than the context:
    tests/causal_lm/test_causal_lm_generate.py::test_compiled_generate_equals_the_graph_loop).
    The fixed memory of stacked layers: attn_type 1's two layers; the others have one (what
    differs between the variants is where their positions enter)."""
    model = random_model(attn_type=attn_type, n_layer=2 if attn_type == 1 else 1)
    prompt = np.random.RandomState(11).randint(0, 23, size=(2, 11))
    gen = Generator(model, seg_len=4, mem_len=6)
    for settings in (GREEDY, SAMPLED):
        want = gen.generate(prompt, 13, **settings)
        got = gen.generate_compiled(prompt, 13, **settings)
        np.testing.assert_array_equal(got, want, err_msg=str(settings))
    assert len(set(want.ravel().tolist())) > 2  # sampled: not a degenerate constant output


def test_compiled_generation_is_traced_once_per_bucket():
    """Static shapes: two prompt lengths of one bucket and two token counts of one buffer
    bucket run the same traced (and compiled) function; a new prompt bucket and a new buffer
    bucket trace once more each. Every call's greedy and sampled tokens are the graph loop's
    (attn_type 2, Vaswani et al.'s absolute positions: also its case of
    `test_compiled_equals_graph_loop`): prompts of 3 segments (the last one padded) with a
    memory shorter than the context, a prompt shorter than a segment with a memory longer than
    the context, and 1 token (0 tokens: an empty result, no new trace). One layer: the buckets
    and traces are what it checks (stacked layers: `test_compiled_equals_graph_loop[1]`)."""
    model = random_model(attn_type=2, n_layer=1)
    gen = Generator(model, seg_len=4, mem_len=12, jit_compile=True)
    rng = np.random.RandomState(3)
    traces = []
    original = gen._fixed

    def counting(*args, **kwargs):
        traces.append(args[0].shape)
        return original(*args, **kwargs)

    gen._fixed = counting
    gen.compiled = tf.function(counting, jit_compile=True)
    graph_loop = Generator(model, seg_len=4, mem_len=12)

    def check(prompt, num_tokens):
        for settings in (GREEDY, SAMPLED):
            tokens = gen.generate(prompt, num_tokens, **settings)
            assert tokens.shape == (2, num_tokens)
            want = graph_loop.generate(prompt, num_tokens, **settings)
            np.testing.assert_array_equal(tokens, want, err_msg=str(settings))
        return want

    for prompt_len, num_tokens in [(9, 5), (12, 8)]:  # 3 segments, the last padded / full
        want = check(rng.randint(0, 23, size=(2, prompt_len)), num_tokens)
        assert len(set(want.ravel().tolist())) > 2  # sampled: not a degenerate constant output
    assert len(traces) == 1 and gen.compiled.experimental_get_tracing_count() == 1
    assert traces[0] == (2, 16)  # 3 segments of 4 -> 4 segments
    # As a TPU needs: the loops (prompt segments, tokens) carry only fully defined shapes.
    graph = gen.compiled.get_concrete_function(
        tf.zeros([2, 16], tf.int32), tf.constant(9), tf.constant(5),
        sampler_fields(sampler_tensors(1.0, 0, 1.0, 0)), tf.zeros([0], tf.int32),
        max_tokens=8).graph
    loops = [op for op in graph.get_operations() if op.type in ("While", "StatelessWhile")]
    assert len(loops) == 2
    for loop in loops:
        assert all(out.shape.is_fully_defined() for out in loop.outputs), loop.outputs
    assert gen.compiled.experimental_get_tracing_count() == 1
    short = rng.randint(0, 23, size=(2, 3))  # 3 + 8 tokens: the memory of 12 never fills
    want = check(short, 8)  # prompt bucket 4, buffer bucket 8
    assert len(set(want.ravel().tolist())) > 2
    assert gen.compiled.experimental_get_tracing_count() == 2 and traces[-1] == (2, 4)
    check(short, 1)  # buffer bucket 1
    assert gen.generate_compiled(short, 0).shape == (2, 0)  # buffer bucket 1 too
    assert gen.compiled.experimental_get_tracing_count() == 3


def test_buckets():
    assert [buckets.prompt_bucket(n, 4) for n in (1, 3, 4, 5, 8, 9, 16, 17)] == [
        (1, 1), (4, 4), (4, 4), (4, 8), (4, 8), (4, 16), (4, 16), (4, 32)]
    assert buckets.prompt_bucket(16, 128) == (16, 16)
    assert buckets.prompt_bucket(300, 128) == (128, 512)
    # a segment length that is no power of two: the segment the compiled loop cuts, not longer
    assert buckets.prompt_bucket(100, 100) == (100, 128)
    assert [buckets.tokens_bucket(n) for n in (0, 1, 2, 3, 5, 64, 65)] == [
        1, 1, 2, 4, 8, 64, 128]


def test_sampling_draws_from_the_filtered_distribution():
    """Independently of the sampler's code: over 3000 seeds the frequencies of the tokens match
    the softmax of the filtered logits (within 4 standard deviations), and removed tokens never
    come."""
    rng = np.random.RandomState(2)
    log_probs = tf.nn.log_softmax(rng.normal(size=(1, 12)).astype(np.float32) * 1.5)
    settings = (0.9, 6, 0.95)
    filtered = sampling.filter_logits(log_probs, *settings).numpy()[0]
    kept = np.isfinite(filtered)
    probs = np.where(kept, np.exp(filtered - filtered[kept].max()), 0.0)
    probs /= probs.sum()
    draws = 3000
    seeds = np.arange(draws, dtype=np.int64)
    # as a graph, as the loops run it (its per-row draws one tf.while_loop, not 3000 eager steps)
    sampler = sampler_tensors(*settings, seeds)
    choose = tf.function(lambda rows: sampling.choose(rows, 0, sampler))
    tokens = choose(tf.repeat(log_probs, draws, axis=0)).numpy()
    counts = np.bincount(tokens, minlength=12)
    assert counts[~kept].sum() == 0
    sigma = np.sqrt(draws * probs * (1 - probs))
    assert (np.abs(counts - draws * probs) <= 4 * sigma + 1).all(), (counts, draws * probs)


def test_sampling_is_the_same_under_xla():
    rng = np.random.RandomState(1)
    log_probs = tf.nn.log_softmax(rng.normal(size=(64, 30)).astype(np.float32) * 2)
    seeds = tf.constant(np.arange(64), tf.int64)
    sampler = sampler_tensors(1.0, 0, 1.0, seeds)
    choose = lambda step: sampling.choose(log_probs, step, sampler)  # noqa: E731
    compiled = tf.function(choose, jit_compile=True)
    for step in range(3):
        np.testing.assert_array_equal(compiled(tf.constant(step)).numpy(),
                                      choose(tf.constant(step)).numpy())


def test_jit_compile_choice():
    assert choose_generation("true").mode == "whole"
    assert choose_generation(False).mode is None
    on_cpu = choose_generation("auto")
    assert on_cpu.mode is None and "CPU" in on_cpu.reason
    with pytest.raises(ValueError, match="--jit_compile must be one of auto, true, false"):
        choose_generation("yes")
