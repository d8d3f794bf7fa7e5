"""Time-based progress with a fake clock: a line at least every `log_seconds` whatever
`--log_steps` says, from the heartbeat while a long loop runs and from the step-based log once
loops are cut to that length; and the duration estimate's arithmetic."""
import pytest

from txl_tf import TransformerXLConfig

from txl_tf.model import flops as model_flops
from txl_tf.training import actions
from txl_tf.training.measurement import duration
from txl_tf.training.controller import Controller
from txl_tf.training.reporting.heartbeat import Heartbeat
from txl_tf.training.trainer import LoopStats


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_heartbeat_speaks_after_the_silence_and_not_before():
    clock, lines = FakeClock(), []
    hb = Heartbeat(60, train_steps=1000, estimate_seconds_per_step=5.0, clock=clock,
                   echo=lines.append)
    assert hb.tick() is None  # no loop running
    hb.loop_started(step=0, num_steps=100)
    clock.now += 59
    assert hb.tick() is None
    clock.now += 1
    line = hb.tick()
    assert line == lines[-1]
    assert line.startswith("step 0/1000: running steps 1-100 for 60 s; 5 s per step "
                           "(estimate (FLOPs)), about 83 min left"), line
    clock.now += 30
    assert hb.tick() is None  # the silence starts again at the line
    hb.line_printed()  # another line (the step-based log)
    clock.now += 59
    assert hb.tick() is None
    # The first loop (tracing) is the only measurement until a second loop ends.
    hb.loop_finished(step=100, num_steps=100, seconds=1000.0)
    assert hb.measured_seconds_per_step() == pytest.approx(10.0)
    hb.loop_started(step=100, num_steps=50)
    clock.now += 60
    assert ("10 s per step (measured over the first 100 steps, compilation included), about "
            "2.5 hours left") in hb.tick()
    hb.loop_finished(step=150, num_steps=50, seconds=200.0)
    assert hb.measured_seconds_per_step() == pytest.approx(4.0)  # 200 s / 50 steps
    hb.loop_started(step=150, num_steps=50)
    clock.now += 120
    assert "4 s per step (measured over 50 steps), about 57 min left" in hb.tick()


def test_without_seconds_there_is_no_heartbeat():
    clock = FakeClock()
    hb = Heartbeat(0, train_steps=10, clock=clock, echo=pytest.fail)
    hb.loop_started(0, 10)
    clock.now += 1e6
    assert hb.tick() is None


class SlowTrainer:
    """Each step takes `step_seconds` of the fake clock; the heartbeat's thread is played by a
    tick after every step."""

    def __init__(self, clock, step_seconds, heartbeat):
        self.clock, self.step_seconds, self.heartbeat = clock, step_seconds, heartbeat
        self.loops = []

    def train(self, iterator, mems, n):
        self.loops.append(n)
        for _ in range(n):
            self.clock.now += self.step_seconds
            self.heartbeat.tick()
        return mems, LoopStats(steps=n, nll_sum=2.0 * n, tokens=float(n), grad_norm_sum=0.0)


class Summaries:
    level, metric = "char", "bpc"

    def train(self, *args):
        pass

    def console(self, step, train_steps, loss, lr, tokens_per_sec, eta, eta_note=""):
        return f"step {step}/{train_steps} | loss {loss}"


class Timed:
    """The lines printed, with the fake time."""

    def __init__(self, clock):
        self.clock, self.lines = clock, []

    def __call__(self, line):
        self.lines.append((self.clock.now, line))


def test_a_line_at_least_every_log_seconds_whatever_log_steps(monkeypatch):
    clock = FakeClock()
    timed = Timed(clock)
    hb = Heartbeat(60, train_steps=200, clock=clock, echo=timed)
    monkeypatch.setattr("builtins.print", lambda line, flush=False: timed(line))
    log = actions.LogProgress(Summaries(), every=1000, train_steps=200,
                              learning_rate=lambda i: 0.1, heartbeat=hb)
    trainer = SlowTrainer(clock, step_seconds=7.0, heartbeat=hb)
    controller = Controller(trainer, None, None, step=0, steps_per_loop=50, actions=[log],
                            heartbeat=hb, clock=clock)
    with monkeypatch.context() as m:  # the controller's thread is replaced by the ticks above
        m.setattr(Heartbeat, "running", lambda self, interval=1.0: _no_thread(self))
        assert controller.run(200) == 200
    # The first loop is the recipe's 50 steps (350 s); then loops of 60 s // 7 s = 8 steps.
    assert trainer.loops[0] == 50 and set(trainer.loops[1:-1]) == {8}
    times = [1000.0] + [t for t, _ in timed.lines]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= 60 + 7, gaps  # a tick comes every step of 7 s
    running = [line for _, line in timed.lines if "running steps 1-50" in line]
    assert len(running) == 5  # 350 s in the first loop: lines at 63, 126, 189, 252, 315 s
    losses = [line for _, line in timed.lines if "| loss 2.0" in line]
    assert len(losses) >= len(trainer.loops) - 2  # then a loss line where each loop ends
    assert losses[-1].startswith("step 200/200")


class _no_thread:
    def __init__(self, hb):
        hb.line_printed()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_duration_estimate_is_the_model_flops_over_the_rate():
    config = TransformerXLConfig(n_token=204, n_layer=24, d_model=1024, n_head=8, d_head=128,
                                 d_inner=3072, tgt_len=768, mem_len=768)
    est = duration.estimate_step(config, chunk_batch=1, global_batch=64, replicas=1, rate=1e11)
    per_token = model_flops.train_flops_per_token(config, 1, 768, 768)
    assert est.flops == pytest.approx(per_token * 64 * 768)
    assert est.seconds == pytest.approx(est.flops / 1e11)
    line = duration.estimate_line(est, 400_000, "a TPU with 32 cores")
    days = est.seconds * 400_000 / 86400
    assert f"at least {est.seconds:,.3g} s per step here" in line
    assert (f"{days / 365.25:.1f} years" if days >= 730 else f"{days:.0f} days") in line
    assert line.endswith("the recipe targets a TPU with 32 cores, see docs/training.md")
    short = duration.estimate_line(duration.StepEstimate(1e9, 1e11, 1, 0.01), 600,
                                   "a TPU with 32 cores")
    assert "6 s for 600 steps" in short and "targets" not in short  # not named for short runs
