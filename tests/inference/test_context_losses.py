"""Per-token losses with exactly c tokens of context, for models with memory, without memory and
with absolute positions."""
import functools

import keras
import numpy as np
import pytest

from txl_tf.inference import context_losses as cl
from txl_tf.inference.context_losses import ContextLossError, ContextRegime
from txl_tf.model.context_settings import ContextSettings

from tiny import tiny_config, tiny_model

V = 20


_MODELS = {}


def loud_model(seed=0, **changes):
    """`tiny_model` with large initial weights so that every visible token moves the loss
    (n_token V, tgt_len and mem_len 4, init_std and proj_init_std 0.5), and `changes`; built
    once per config and seed in this process and shared: the tests only read it. The global
    seed is set again on every call, as if the model were built anew."""
    fields = {"n_token": V, "tgt_len": 4, "mem_len": 4, "init_std": 0.5, "proj_init_std": 0.5,
              **changes}
    key = (seed, tiny_config(**fields).to_json())
    if key not in _MODELS:
        _MODELS[key] = tiny_model(seed, **fields)
    keras.utils.set_random_seed(seed)
    return _MODELS[key]


def stream(length=60, seed=1):
    return np.random.default_rng(seed).integers(0, V, length)


def with_memory():
    model = loud_model()
    return model, cl.recurrent_regime(model.config)


def with_memory_same_length():
    model = loud_model()
    return model, cl.recurrent_regime(model.config, same_length=True)


def without_memory():
    model = loud_model()
    return model, cl.window_regime(model.config)


def vanilla():
    model = loud_model(attn_type=2, mem_len=0)
    return model, cl.default_regime(model.config)


def vanilla_with_memory():
    model = loud_model(attn_type=2)
    return model, cl.default_regime(model.config)


def al_rfou_with_memory():
    model = loud_model(attn_type=3)
    return model, cl.default_regime(model.config)


# Context lengths within each reading's reach (attn_type 3: at distance 11 these weights move the
# loss by less than 1e-5, so 9): with memory, c > Q = 4 puts the farthest token in
# the memory; with same_length every layer sees M = 4 tokens back, so 2 layers reach 8 tokens.
KINDS = {
    "with_memory": (with_memory, [1, 3, 6, 11]),
    "with_memory_same_length": (with_memory_same_length, [1, 3, 6, 8]),
    "without_memory": (without_memory, [1, 3, 6, 11]),
    "vanilla": (vanilla, [1, 3, 6, 11]),
    "vanilla_with_memory": (vanilla_with_memory, [1, 3, 6, 11]),
    "al_rfou_with_memory": (al_rfou_with_memory, [1, 3, 6, 9]),
}


@functools.cache
def made(kind):
    """(model, regime, its WindowReader) of KINDS[kind], built once and shared read-only by the
    tests of that kind (the reader's traced reading is reused)."""
    model, regime = KINDS[kind][0]()
    return model, regime, cl.WindowReader(model, regime)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_only_the_c_previous_tokens_change_the_loss(kind):
    """Changing token p changes l(c, u) for a scored token u iff u - c <= p <= u - 1."""
    contexts = KINDS[kind][1]
    model, regime, reader = made(kind)
    tokens = stream()
    positions = np.arange(max(contexts), max(contexts) + 16)
    before = cl.context_losses(model, tokens, positions, contexts, reader=reader)
    changed_position = positions[0] + 2
    edited = tokens.copy()
    edited[changed_position] = (edited[changed_position] + 7) % V
    after = cl.context_losses(model, edited, positions, contexts, reader=reader)
    distance = positions - changed_position  # > 0: the edit is before the scored token
    for k, c in enumerate(contexts):
        visible = (distance >= 1) & (distance <= c)
        outside = ~visible & (distance != 0)  # distance 0: the scored token itself was edited
        np.testing.assert_array_equal(after[k][outside], before[k][outside],
                                      err_msg=f"c={c}: a token outside the context counted")
        moved = np.abs(after[k][visible] - before[k][visible])
        assert moved.size and moved.min() > 1e-5, f"c={c}: a token inside the context did not"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_distance_c_counts_and_distance_c_plus_one_does_not(kind):
    contexts = KINDS[kind][1]
    model, regime, reader = made(kind)
    tokens = stream()
    t = 40
    for c in contexts:
        base = cl.losses_at_context(model, tokens, [t], c, reader=reader)[0]
        for distance, should_move in ((c, True), (c + 1, False)):
            edited = tokens.copy()
            edited[t - distance] = (edited[t - distance] + 5) % V
            moved = cl.losses_at_context(model, edited, [t], c, reader=reader)[0] - base
            assert (abs(moved) > 1e-5) == should_move, (c, distance, moved)


def naive_losses(model, regime, tokens, positions, c):
    """[-log P(x_t | x_{t-c} .. x_{t-1}) for t in positions] from log_probs, reading each window
    on its own, segment by segment (one segment without memory); the windows of all positions
    are the rows of one batch (rows never see each other)."""
    windows = np.stack([np.asarray(tokens[t - c:t], np.int32) for t in positions])
    q = regime.segment_len or c
    mems = model.init_mems(len(positions), regime.mem_len) or None
    for begin in range(0, c, q):
        out = model(windows[:, begin:begin + q], mems=mems, mem_len=regime.mem_len,
                    clamp_len=regime.clamp_len, same_length=regime.same_length)
        mems = out["mems"] or None
    last = out["log_probs"][:, -1].numpy()
    return [-float(last[row, tokens[t]]) for row, t in enumerate(positions)]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_losses_equal_a_naive_window_by_window_reading(kind):
    contexts = KINDS[kind][1]
    model, regime, reader = made(kind)
    tokens = stream()
    positions = np.array([11, 12, 20, 37, 59])
    losses = cl.context_losses(model, tokens, positions, contexts, regime, batch_tokens=40,
                               reader=reader)
    assert losses.shape == (len(contexts), positions.size) and losses.dtype == np.float32
    for k, c in enumerate(contexts):
        expected = naive_losses(model, regime, tokens, positions, c)
        np.testing.assert_allclose(losses[k], expected, rtol=1e-5, atol=1e-5)


def test_clamp_len_is_applied():
    model, regime, reader = made("without_memory")  # the window regime without clamping
    tokens = stream()
    positions = np.arange(11, 20)
    free = cl.context_losses(model, tokens, positions, [11], regime, reader=reader)
    clamped = cl.context_losses(model, tokens, positions, [11],
                                cl.window_regime(model.config, clamp_len=2))
    assert np.abs(free - clamped).max() > 1e-4
    window = ContextRegime(ContextSettings(mem_len=0, clamp_len=2))
    expected = naive_losses(model, window, tokens, positions, 11)
    np.testing.assert_allclose(clamped[0], expected, rtol=1e-5, atol=1e-5)


def test_batching_does_not_change_the_losses():
    model, regime, reader = made("with_memory")
    tokens = stream()
    positions = np.arange(11, 40)
    one = cl.context_losses(model, tokens, positions, [2, 5, 11], batch_tokens=1, reader=reader)
    many = cl.context_losses(model, tokens, positions, [2, 5, 11], batch_tokens=10_000,
                             reader=reader, progress=True)
    np.testing.assert_allclose(one, many, rtol=1e-6, atol=1e-6)


def test_default_regime_and_scored_positions():
    assert cl.default_regime(loud_model().config) == ContextRegime(
        ContextSettings(4, 4, -1, False), recurrent=True)
    window = cl.default_regime(loud_model(mem_len=0).config)
    assert window == ContextRegime(ContextSettings(4, 0, -1, False))
    assert (window.segment_len, window.mem_len, window.same_length) == (None, 0, False)
    assert cl.scored_positions(20, [4, 8], 3).tolist() == [8, 9, 10]
    assert cl.scored_positions(10, [4, 8]).tolist() == [8, 9]
    with pytest.raises(ContextLossError, match="at least 9 are needed"):
        cl.scored_positions(8, [4, 8])
    with pytest.raises(ContextLossError, match="scored tokens must be >= 1"):
        cl.scored_positions(20, [4, 8], 0)


@pytest.mark.parametrize("call, message", [
    (lambda m: cl.context_losses(m, stream(), [5, 6], [2, 6]), "must lie in [6, 60)"),
    (lambda m: cl.context_losses(m, stream(), [5, 60], [2]), "must lie in [2, 60)"),
    (lambda m: cl.context_losses(m, np.full(30, V), [10], [2]), "token ids must be in [0, 20)"),
    (lambda m: cl.context_losses(m, stream(), [10], [0, 2]), "context lengths must be >= 1"),
    (lambda m: cl.context_losses(m, stream(), [], [2]), "positions must be a non-empty"),
    (lambda m: cl.context_losses(m, stream(), [10], [2.5]), "context_lengths must be a non-empty"),
    (lambda m: ContextRegime(ContextSettings(mem_len=4)), "has no memory"),
    (lambda m: ContextRegime(ContextSettings(mem_len=0, same_length=True)), "has no memory"),
    (lambda m: ContextRegime(ContextSettings(4, mem_len=0), recurrent=True), "mem_len >= 1"),
])
def test_bad_input_is_one_clear_error(call, message):
    model = loud_model()
    with pytest.raises(ContextLossError) as error:
        call(model)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_reader_with_another_regime_is_refused():
    model, regime = with_memory()
    reader = cl.WindowReader(model, cl.window_regime(model.config))
    with pytest.raises(ContextLossError, match="pass one of them"):
        cl.context_losses(model, stream(), [10], [2], regime, reader=reader)


def test_a_model_trained_without_memory_can_be_read_with_memory():
    """Every attn_type carries memory: a vanilla model trained with mem_len 0 is read in segments
    of 4 with a memory of 4, exactly as the naive reading."""
    model = loud_model(attn_type=2, mem_len=0)
    regime = ContextRegime(ContextSettings(tgt_len=4, mem_len=4), recurrent=True)
    positions = np.array([10, 11, 30])
    losses = cl.context_losses(model, stream(), positions, [2, 6, 9], regime, batch_tokens=20)
    for k, c in enumerate([2, 6, 9]):
        expected = naive_losses(model, regime, stream(), positions, c)
        np.testing.assert_allclose(losses[k], expected, rtol=1e-5, atol=1e-5)
    assert np.abs(losses - cl.context_losses(model, stream(), positions, [2, 6, 9])).max() > 1e-4


def test_absolute_positions_read_one_window_per_context_length():
    """Positions counted back from the newest key: the loss of x_t with c tokens of context is
    read from a window ending at x_{t-1}, whatever other context lengths are asked for."""
    model, regime, reader = made("vanilla_with_memory")
    positions = np.arange(11, 17)
    alone = cl.context_losses(model, stream(), positions, [3], regime, reader=reader)
    together = cl.context_losses(model, stream(), positions, [3, 6, 11], regime, reader=reader)
    np.testing.assert_allclose(together[0], alone[0], rtol=1e-6, atol=1e-6)
