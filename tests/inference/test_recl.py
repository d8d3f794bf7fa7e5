"""RECL (Appendix C) on hand-made loss arrays whose answer is worked out by hand below."""
import math

import numpy as np
import pytest

from txl_tf.inference import relative_effective_context as recl
from txl_tf.inference.relative_effective_context import ReclInputError

CONTEXTS = [100, 200, 300, 400, 500]  # c_0 = 100, Delta = 100


def strong_and_weak_group():
    """Two models, ten tokens, five context lengths: [2, 5, 10] losses.

    Model X (index 0). Its losses at c_0 are
        token:  0 | 1 2 3 4 | 5 6 7 8 9
        loss:   5 | 3 3 3 3 | 1 1 1 1 1
    and fall by these amounts from one context length to the next:
        c_0 -> c_1: token 0 by 0.5, every other token by 0.1
        c_1 -> c_2: token 0 by 0.08, the others by 0
        c_2 -> c_3: token 0 by 0.04, the others by 0
        c_3 -> c_4: token 0 by 0.005, the others by 0
    Model Y (index 1) has X's c_0 losses + 1 at every context length.

    Y is worse than X on every token at every c, so b(c, t) = l_X(c, t). X's losses never grow
    with c, so min(b(c, t), l_X(c', t)) = l_X(c', t), f_X(c, c) - f_X(c, c') is the mean drop D
    over T(c), and g_X(c, c') = 1 - exp(-D). Token 0 stays the hardest, tokens 1-4 the next, so
    T(c) = {0} at r = 0.1, {0, 1, 2, 3, 4} at r = 0.5, all ten at r = 1.0.

      step       r = 0.1                 r = 0.5                      r = 1.0
      c_0->c_1   D=0.5, g=0.393 go on    D=0.9/5=0.18, g=0.165 go on  D=1.4/10=0.14, g=0.131 go on
      c_1->c_2   D=0.08, g=0.077 go on   D=0.016, g=0.0159 go on      D=0.008, g=0.00797 STOP
      c_2->c_3   D=0.04, g=0.039 go on   D=0.008, g=0.00797 STOP
      c_3->c_4   D=0.005, g=0.00499 STOP
    RECL of X: 400 at r = 0.1, 300 at r = 0.5, 200 at r = 1.0.

    For Y, l_Y(c', t) >= b(c, t) + 1 > b(c, t), so f_Y(c, c') = mean b(c, t) = f_Y(c, c): its gain
    is 0 at the first step and its RECL is c_0 = 100 at every r.
    """
    start = np.array([5, 3, 3, 3, 3, 1, 1, 1, 1, 1], np.float64)
    drops = [np.r_[0.5, [0.1] * 9], np.r_[0.08, [0.0] * 9], np.r_[0.04, [0.0] * 9],
             np.r_[0.005, [0.0] * 9]]
    x = [start]
    for drop in drops:
        x.append(x[-1] - drop)
    y = [start + 1.0] * len(CONTEXTS)
    return np.stack([np.stack(x), np.stack(y)])


def test_recl_of_the_hand_worked_group_at_each_ratio():
    table = recl.recl_table(strong_and_weak_group(), CONTEXTS)
    assert list(table) == [0.1, 0.5, 1.0]
    assert [int(table[r].lengths[0]) for r in table] == [400, 300, 200]
    assert [int(table[r].lengths[1]) for r in table] == [100, 100, 100]
    assert not any(result.censored.any() for result in table.values())


def test_gains_match_the_hand_computation():
    result = recl.relative_effective_context_length(strong_and_weak_group(), CONTEXTS, 0.5)
    # r = 0.5, model X, steps c_0->c_1 .. c_3->c_4: mean drops 0.18, 0.016, 0.008, 0.001.
    expected = [1 - math.exp(-d) for d in (0.18, 0.016, 0.008, 0.001)]
    np.testing.assert_allclose(result.gains[0], expected, rtol=1e-9)
    np.testing.assert_allclose(result.gains[1], 0.0, atol=1e-12)


def test_the_baseline_is_the_per_token_minimum_over_the_group():
    # Two tokens; A is better on token 0, B on token 1: b(c_0, .) = [1, 1] is no single model.
    # A at c_1 = [0.5, 3]: f_A(c_0, c_1) = (min(1, 0.5) + min(1, 3)) / 2 = 0.75, f_A(c_0, c_0) = 1,
    # g_A = (e^1 - e^0.75) / e^1 = 1 - e^-0.25. B at c_1 = [3, 1]: f_B = (1 + 1) / 2 = 1, g_B = 0.
    losses = np.array([[[1.0, 3.0], [0.5, 3.0]],
                       [[3.0, 1.0], [3.0, 1.0]]])
    np.testing.assert_allclose(recl.baseline(losses)[0], [1.0, 1.0])
    np.testing.assert_allclose(recl.relative_loss(losses, 0, 1, 1.0), [0.75, 1.0])
    np.testing.assert_allclose(recl.relative_gain(losses, 0, 1, 1.0),
                               [1 - math.exp(-0.25), 0.0], atol=1e-12)


def test_a_model_that_improves_only_above_the_groups_baseline_gains_nothing():
    # B's own loss falls 3 -> 2.5 -> 2.2, but A already has 2 at c_0 on every token, so
    # min(b(c, t), l_B(c', t)) = b(c, t) and g_B = 0: RECL_B = c_0 = 10 (an absolute ECL would
    # count B's own improvement). A falls 2 -> 1.5 -> 1.0: g_A = 1 - e^-0.5 >= 0.01 at both steps,
    # so A's search runs out of grid: RECL_A = 30, censored (a lower bound).
    a = np.array([[2.0] * 4, [1.5] * 4, [1.0] * 4])
    b = np.array([[3.0] * 4, [2.5] * 4, [2.2] * 4])
    result = recl.relative_effective_context_length(np.stack([a, b]), [10, 20, 30], 1.0)
    assert result.lengths.tolist() == [30, 10]
    assert result.censored.tolist() == [True, False]


def test_no_gain_gives_the_smallest_context_and_gain_everywhere_the_largest():
    flat = np.ones([1, 4, 6])  # no model gains anything: g = 0 < 0.01 at the first step
    result = recl.relative_effective_context_length(flat, [8, 16, 24, 32], 0.1)
    assert result.lengths.tolist() == [8] and result.censored.tolist() == [False]
    falling = np.stack([np.full(6, 4.0 - k) for k in range(4)])[None]  # -1 nat per step
    result = recl.relative_effective_context_length(falling, [8, 16, 24, 32], 0.1)
    assert result.lengths.tolist() == [32] and result.censored.tolist() == [True]


def test_threshold_argument():
    # One token, loss 1 -> 0.95: g = 1 - e^-0.05 = 0.0488, >= 0.01 (go on, censored at c_1 = 2)
    # but < 0.1 (stop at c_0 = 1).
    losses = np.array([[[1.0], [0.95]]])
    assert recl.relative_effective_context_length(losses, [1, 2], 1.0).lengths.tolist() == [2]
    stopped = recl.relative_effective_context_length(losses, [1, 2], 1.0, threshold=0.1)
    assert stopped.lengths.tolist() == [1] and stopped.censored.tolist() == [False]


def test_hard_tokens_count_and_order():
    b = np.array([0.5, 3.0, 1.0, 3.0, 2.0])
    assert recl.hard_tokens(b, 1.0).tolist() == [1, 3, 4, 2, 0]
    assert recl.hard_tokens(b, 0.4).tolist() == [1, 3]  # round(0.4 * 5) = 2, tie: earlier first
    assert recl.hard_tokens(b, 0.1).tolist() == [1]  # round(0.5) = 0, at least one token


@pytest.mark.parametrize("losses, contexts, ratio, message", [
    (np.ones([2, 3, 4]), [1, 2], 0.1, "3 context lengths"),
    (np.ones([2, 3]), [1, 2, 3], 0.1, "[models, contexts, tokens]"),
    (np.ones([2, 3, 4]), [2, 1, 3], 0.1, "increasing and evenly spaced"),
    (np.ones([2, 3, 4]), [1, 2, 4], 0.1, "increasing and evenly spaced"),
    (np.ones([2, 3, 4]), [0, 1, 2], 0.1, "positive"),
    (np.ones([2, 1, 4]), [1], 0.1, "at least two context lengths"),
    (np.ones([2, 2, 4]), [1.0, 2.0], 0.1, "integers"),
    (np.full([1, 2, 2], np.nan), [1, 2], 0.1, "finite"),
    (np.ones([2, 3, 4]), [1, 2, 3], 0.0, "(0, 1]"),
    (np.ones([2, 3, 4]), [1, 2, 3], 1.5, "(0, 1]"),
])
def test_bad_input_is_one_clear_error(losses, contexts, ratio, message):
    with pytest.raises(ReclInputError) as error:
        recl.relative_effective_context_length(losses, contexts, ratio)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_grid_can_be_checked_before_any_loss_is_computed():
    assert recl.check_context_lengths([64, 128, 192]).tolist() == [64, 128, 192]
    with pytest.raises(ReclInputError, match="evenly spaced"):
        recl.check_context_lengths([64, 128, 256])
    with pytest.raises(ReclInputError, match="at least two context lengths"):
        recl.check_context_lengths([64])


def test_rows_and_text_table():
    a = np.array([[2.0] * 4, [1.5] * 4, [1.0] * 4])
    b = np.array([[3.0] * 4, [2.5] * 4, [2.2] * 4])
    table = recl.recl_table(np.stack([a, b]), [10, 20, 30])
    rows = recl.recl_rows(["xl", "vanilla"], table)
    assert rows[0] == {"model": "xl", "recl": {"0.1": 30, "0.5": 30, "1.0": 30},
                       "censored": {"0.1": True, "0.5": True, "1.0": True}}
    assert rows[1]["recl"] == {"0.1": 10, "0.5": 10, "1.0": 10}
    lines = recl.format_recl_table(["xl", "vanilla"], table).splitlines()
    assert lines[0].split() == ["model", "r=0.1", "r=0.5", "r=1.0"]
    assert lines[1].split() == ["xl", ">=30", ">=30", ">=30"]
    assert lines[2].split() == ["vanilla", "10", "10", "10"]
