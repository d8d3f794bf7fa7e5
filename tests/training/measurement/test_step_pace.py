"""Estimates that correct themselves, against a fake clock: the FLOP estimate until steps ran,
then the pace of the steps after the compiling first loop, in the heartbeat, the step log's ETA
and the measured duration line; and sub-second durations."""
import pytest

from txl_tf.training import actions
from txl_tf.training.measurement import duration
from txl_tf.training.controller import Controller
from txl_tf.training.reporting.heartbeat import Heartbeat
from txl_tf.training.measurement.step_pace import StepPace
from txl_tf.training.trainer import LoopStats


class FakeClock:
    def __init__(self):
        self.now = 500.0

    def __call__(self):
        return self.now


class CompilingTrainer:
    """The first call costs `compile_seconds` more (tracing and XLA); every step `step_seconds`
    of the fake clock."""

    def __init__(self, clock, step_seconds, compile_seconds):
        self.clock, self.step_seconds, self.compile_seconds = clock, step_seconds, compile_seconds
        self.calls = 0

    def train(self, iterator, mems, n):
        self.clock.now += n * self.step_seconds + (self.compile_seconds if not self.calls else 0)
        self.calls += 1
        return mems, LoopStats(steps=n, nll_sum=1.5 * n, tokens=4.0 * n, grad_norm_sum=0.0)


class RecordingSummaries:
    level, metric = "char", "bpc"

    def __init__(self):
        self.etas = []

    def train(self, *args):
        pass

    def console(self, step, train_steps, loss, lr, tokens_per_sec, eta, eta_note=""):
        self.etas.append((step, eta, eta_note))
        return f"step {step}/{train_steps}"


def test_the_pace_is_the_estimate_then_the_first_loop_then_the_steps_after_it():
    pace = StepPace(estimate=0.05)
    assert (pace.seconds_per_step(), pace.source()) == (0.05, "estimate (FLOPs)")
    assert pace.compile_seconds() is None and not pace.measured
    pace.loop_finished(10, 32.0)
    assert pace.seconds_per_step() == pytest.approx(3.2)
    assert pace.source() == "measured over the first 10 steps, compilation included"
    pace.loop_finished(10, 2.0)
    pace.loop_finished(30, 9.0)
    steps, seconds = 40, 11.0  # the loops after the first
    assert pace.measured and pace.seconds_per_step() == pytest.approx(seconds / steps)
    assert pace.source() == "measured over 40 steps"
    assert pace.compile_seconds() == pytest.approx(32.0 - 10 * seconds / steps)
    assert StepPace().source() == "not measured yet" and StepPace().seconds_per_step() is None


def test_log_eta_and_duration_line_switch_to_the_measured_steps(capsys):
    clock = FakeClock()
    hb = Heartbeat(0, train_steps=100, estimate_seconds_per_step=0.01, clock=clock,
                   echo=print)
    summaries = RecordingSummaries()
    log = actions.LogProgress(summaries, every=10, train_steps=100,
                              learning_rate=lambda i: 0.1, heartbeat=hb)
    measured = actions.MeasuredDuration(hb.pace, train_steps=100)
    trainer = CompilingTrainer(clock, step_seconds=0.5, compile_seconds=40.0)
    controller = Controller(trainer, None, None, step=0, steps_per_loop=10,
                            actions=[log, measured], heartbeat=hb, clock=clock)
    assert controller.run(30) == 30
    # Step 10: only the compiling loop: (40 + 10 x 0.5) / 10 s per step, said so.
    assert summaries.etas[0] == (10, pytest.approx((40 + 5) / 10 * 90), "compilation included")
    # Steps 20 and 30: the measured 0.5 s per step, without a note.
    assert summaries.etas[1:] == [(20, pytest.approx(0.5 * 80), ""),
                                  (30, pytest.approx(0.5 * 70), "")]
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("duration measured")]
    assert lines == [measured.line]  # once, after the first loop after compilation (step 20)
    assert measured.line.startswith("duration measured: 0.5 s per step (measured over 10 steps, "
                                    "compilation excluded), about 40 s for the 80 steps left")
    assert "the first 10 steps took 45 s, about 40 s of it tracing and compilation" in out
    assert "the estimate from the FLOPs was 0.01 s per step, the measured step 50x that" in out


def test_without_a_heartbeat_the_log_keeps_its_own_pace():
    clock = FakeClock()
    summaries = RecordingSummaries()
    log = actions.LogProgress(summaries, every=5, train_steps=20, learning_rate=lambda i: 0.1,
                              echo=False)
    trainer = CompilingTrainer(clock, step_seconds=2.0, compile_seconds=100.0)
    Controller(trainer, None, None, step=0, steps_per_loop=5, actions=[log], clock=clock).run(20)
    assert log.pace.measured and log.pace.seconds_per_step() == pytest.approx(2.0)
    assert summaries.etas[-1] == (20, 0.0, "")
    assert summaries.etas[0][2] == "compilation included"


def test_no_measured_line_before_a_loop_after_the_first():
    pace = StepPace(estimate=1.0)
    assert duration.measured_line(pace, 10) is None
    pace.loop_finished(5, 50.0)
    assert duration.measured_line(pace, 10) is None


@pytest.mark.parametrize("seconds, text", [(0.0, "0 s"), (0.0042, "4.2 ms"), (0.3, "0.3 s"),
                                           (4.25, "4.2 s"), (42.4, "42 s"), (600, "10 min")])
def test_sub_second_durations_are_printed(seconds, text):
    assert duration.human_duration(seconds) == text


def test_a_short_run_is_not_at_least_0_s():
    estimate = duration.StepEstimate(flops=3e8, rate=1e11, replicas=1, seconds=3e8 / 1e11)
    line = duration.estimate_line(estimate, 100)
    assert f"at least {duration.human_duration(estimate.seconds * 100)} for 100 steps" in line
    assert "at least 0.3 s for 100 steps" in line
