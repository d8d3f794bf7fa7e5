"""The two readings of `txl_tf.ablation.attention_length` against naive computations.

Without recurrence: windows of A tokens sliding by S = A - A // 2, each scoring its last S
tokens (the first all, the last those left), compared with one model call per scored token on
that token's own window. With recurrence: segments of Q with memory A - Q, compared with an
eager chain of model calls. Both score every token of every row but its first.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

import txl_tf
from txl_tf.ablation import attention_length as al

from tiny import tiny_config

CONFIG = tiny_config(n_token=11, tgt_len=4, mem_len=0, init_std=0.02)


def model_of(**changes):
    keras.utils.set_random_seed(5)
    model = txl_tf.TransformerXL(CONFIG.replace(**changes))
    model(tf.zeros([1, 4], tf.int32))
    return model


def rows_of(num_rows=2, length=13, seed=1):
    rng = np.random.default_rng(seed)
    return al.stream_rows(rng.integers(0, CONFIG.n_token, num_rows * length + 3), num_rows)


@pytest.mark.parametrize("length", [1, 2, 5, 7, 16, 33])
@pytest.mark.parametrize("attn_len", [1, 2, 3, 4, 7, 8, 40])
def test_window_plan_scores_every_token_once(length, attn_len):
    starts, scored_from, width = al.window_plan(length, attn_len)
    assert width == min(attn_len, length)
    seen = np.zeros(length, int)
    stride = attn_len - attn_len // 2
    for k, (start, first) in enumerate(zip(starts, scored_from)):
        assert 0 <= start and start + width <= length
        positions = np.arange(start + first, start + width)
        seen[positions] += 1
        context = positions - start  # tokens of the window before the scored one
        if k == 0:
            assert start == 0 and first == 0
        else:
            assert context.min() >= attn_len // 2 and context.max() <= attn_len - 1
            if start + width < length:  # all but the last window slide by S
                assert start == k * stride
    np.testing.assert_array_equal(seen, np.ones(length, int))


def naive_window_loss(model, rows, attn_len):
    """Each scored token read on the window the reading gives it, that window alone through the
    model (no memory). Tokens whose windows coincide share one call, over all rows at once."""
    n = rows.shape[1] - 1
    width, stride = min(attn_len, n), attn_len - attn_len // 2
    total, count, calls = 0.0, 0, {}
    for t in range(n):
        end = width if t < width else min(n, attn_len + stride * -(-(t + 1 - attn_len)
                                                                    // stride))
        start = end - width
        if (start, end) not in calls:
            calls[start, end] = model(rows[:, start:end], labels=rows[:, start + 1:end + 1],
                                      training=False, mem_len=0)["nll"].numpy()
        total += float(calls[start, end][:, t - start].astype(np.float64).sum())
        count += rows.shape[0]
    return total, count


@pytest.mark.parametrize("attn_type", [0, 2, 3])
def test_window_loss_equals_one_call_per_token(attn_type):
    # One layer: without memory the reading sees the model only through its calls on windows.
    model = model_of(attn_type=attn_type, max_klen=4 if attn_type == 3 else None, n_layer=1)
    rows = rows_of()
    for attn_len in (3, 4, 8, 30):
        nll, tokens = al.window_loss(model, rows, attn_len, batch_size=3)
        want, count = naive_window_loss(model, rows, attn_len)
        assert tokens == count == rows.shape[0] * (rows.shape[1] - 1)
        assert nll == pytest.approx(want, rel=1e-5)


def test_recurrent_loss_equals_an_eager_chain():
    model = model_of(mem_len=4)
    rows = rows_of(length=14)
    q, batch = CONFIG.tgt_len, rows.shape[0]
    for attn_len in (5, 8, 16):
        mem_len = attn_len - q
        mems, total, count = model.init_mems(batch, mem_len), 0.0, 0
        for s in range(0, rows.shape[1] - 1, q):
            inputs, labels = rows[:, s:s + q], rows[:, s + 1:s + q + 1]
            inputs = inputs[:, :labels.shape[1]]
            out = model(inputs, mems=mems, labels=labels, training=False, mem_len=mem_len,
                        same_length=False)
            mems = [m[:, -mem_len:] for m in out["mems"]] if labels.shape[1] < q else out["mems"]
            total += float(tf.reduce_sum(out["nll"]))
            count += labels.size
        nll, tokens = al.recurrent_loss(model, rows, attn_len)
        assert tokens == count == batch * (rows.shape[1] - 1)
        assert nll == pytest.approx(total, rel=1e-5)
    with pytest.raises(ValueError, match="no memory"):
        al.recurrent_loss(model, rows, q)


def test_attention_loss_dispatches_and_rows_are_checked(monkeypatch):
    """attention_loss hands its arguments to recurrent_loss with recurrence, to window_loss
    without, and returns their result (both readings are checked against naive ones above)."""
    calls = []

    def reading(name):
        def read(*args):
            calls.append((name,) + args)
            return (float(len(calls)), len(calls))
        return read
    monkeypatch.setattr(al, "recurrent_loss", reading("recurrent"))
    monkeypatch.setattr(al, "window_loss", reading("window"))
    model, rows = object(), rows_of()
    assert al.attention_loss(model, rows, 8, True) == (1.0, 1)
    assert al.attention_loss(model, rows, 8, False) == (2.0, 2)
    assert al.attention_loss(model, rows, 5, False, batch_size=3) == (3.0, 3)
    assert all(c[1] is model and c[2] is rows for c in calls)
    assert [(c[0],) + c[3:] for c in calls] == [("recurrent", 8), ("window", 8, 64),
                                                 ("window", 5, 3)]
    assert al.train_attention_length(CONFIG.replace(mem_len=4)) == 8
    np.testing.assert_array_equal(al.stream_rows(np.arange(10), 3),
                                  [[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    with pytest.raises(ValueError, match="rows"):
        al.stream_rows(np.arange(5), 3)
