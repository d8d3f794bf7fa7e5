"""How `SignalHandler` counts presses (txl_tf/training/interruption.py), without signals: copies
of a press within `DUPLICATE_WINDOW_SECONDS` are that press, anything after the window or another
signal is a second press. The real signals are in test_interrupt.py and
tests/runners/test_interrupt_prepare.py."""
import itertools
import random
import signal

import pytest

from txl_tf.training.interruption import DUPLICATE_WINDOW_SECONDS, SignalHandler

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Exited(Exception):
    pass


def handler(times, deferring=1):
    """A handler reading its clock from `times`, whose exit raises `Exited`, deferring its first
    press to the training loop (so nothing is raised in this thread)."""
    clock = iter(times)
    h = SignalHandler(echo=lambda line: None, clock=lambda: next(clock))
    h.deferring = deferring

    def exit_(code):
        raise Exited(code)
    h.exit = exit_
    return h


def expected_outcomes(arrivals):
    """The outcomes the documented rule gives, computed independently: the first arrival is the
    press; later ones are copies while they are the same signal within the window of the press
    they follow, else the second press."""
    out, first_sig, first_t = [], None, None
    for sig, t in arrivals:
        if first_sig is None:
            out.append("first")
            first_sig, first_t = sig, t
        elif sig == first_sig and t - first_t < DUPLICATE_WINDOW_SECONDS:
            out.append("copy")
        else:
            out.append("second")
            break
    return out


def run(arrivals):
    h = handler([t for _, t in arrivals])
    out = []
    for sig, _ in arrivals:
        try:
            out.append(h.arrived(sig))
        except Exited as exited:
            assert exited.args == (130,)
            out.append("second")
            break
    return out, h


@pytest.mark.parametrize("seed", range(40))
def test_generated_bursts_count_as_the_rule_says(seed):
    rng = random.Random(seed)
    times = sorted(rng.uniform(0, 3 * DUPLICATE_WINDOW_SECONDS) for _ in range(rng.randint(1, 6)))
    arrivals = [(rng.choice(SIGNALS) if rng.random() < 0.3 else signal.SIGINT, t) for t in times]
    out, h = run(arrivals)
    assert out == expected_outcomes(arrivals)
    assert h.requested == signal.Signals(arrivals[0][0]).name


@pytest.mark.parametrize("sig,copies", itertools.product(SIGNALS, (1, 2, 3)))
def test_copies_within_milliseconds_are_one_press(sig, copies):
    """A terminal's group signal plus `timeout`'s two forwards: up to three copies."""
    out, h = run([(sig, 0.001 * i) for i in range(copies)])
    assert out == ["first"] + ["copy"] * (copies - 1)


@pytest.mark.parametrize("sig", SIGNALS)
def test_a_press_after_the_window_is_the_second(sig):
    out, _ = run([(sig, 0.0), (sig, 0.001), (sig, DUPLICATE_WINDOW_SECONDS + 0.001)])
    assert out == ["first", "copy", "second"]
