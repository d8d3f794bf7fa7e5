"""`Controller` and the actions: compiled loops end at every action's boundary, the memory is
carried from loop to loop, actions fire at their interval and at the last step, best/ follows
only saves at evaluated steps."""
import math

import pytest

from txl_tf.training import actions
from txl_tf.training.checkpoints import CheckpointIOError
from txl_tf.training.controller import Controller, LoopOutput
from txl_tf.training.trainer import LoopStats


class FakeTrainer:
    """Records the loop lengths; each step adds 1 to the memory and 2 nats over 1 token."""

    def __init__(self, nll_per_step=2.0):
        self.loops = []
        self.nll_per_step = nll_per_step

    def train(self, iterator, mems, n):
        self.loops.append(n)
        return mems + n, LoopStats(steps=n, nll_sum=self.nll_per_step * n, tokens=float(n),
                                   grad_norm_sum=0.5 * n)


class Recorder:
    def __init__(self, every):
        self.every = every
        self.steps = []

    def __call__(self, output):
        self.steps.append((output.step, output.mems))


def test_loops_end_at_every_boundary_and_carry_the_memory():
    trainer, log, save = FakeTrainer(), Recorder(4), Recorder(6)
    controller = Controller(trainer, iterator=None, mems=0, step=2, steps_per_loop=5,
                            actions=[log, save])
    assert controller.run(end_step=14) == 14
    # From step 2: boundaries 4, 6, 8, 12 (and the end 14); at most 5 steps per loop.
    assert trainer.loops == [2, 2, 2, 4, 2]
    assert [s for s, _ in log.steps] == [4, 6, 8, 12, 14]
    assert all(mems == step - 2 for step, mems in log.steps)  # memory handed on, never reset
    assert controller.mems == 12


def test_non_finite_loss_stops_the_run():
    controller = Controller(FakeTrainer(nll_per_step=math.nan), None, 0, 0, 5)
    with pytest.raises(FloatingPointError, match="at step 5; lower --learning_rate"):
        controller.run(10)


class FakeSummaries:
    level, metric = "char", "bpc"

    def __init__(self):
        self.train_points, self.valid_points = [], []

    def train(self, step, loss, lr, grad_norm, tokens_per_sec):
        self.train_points.append((step, loss, lr, grad_norm))

    def valid(self, step, loss):
        self.valid_points.append((step, loss))

    def console(self, step, train_steps, loss, lr, tokens_per_sec, eta, eta_note=""):
        return f"step {step}/{train_steps} loss {loss}"


class FakeCheckpoints:
    def __init__(self):
        self.saved = []

    def save(self, step, memories):
        self.saved.append((step, memories))
        return f"ckpt-{step}"


class FakeBest:
    """A `BestCheckpoint` that records the best.json of every best/ written."""

    def __init__(self, record=None, is_chief=True, fail=False):
        self.record, self.is_chief, self.fail = record, is_chief, fail
        self.reads, self.written = 0, []

    def read(self):
        self.reads += 1
        return self.record

    def write(self, step, record, copy_data_files=None):
        if self.fail:
            raise CheckpointIOError("no space left on m: the best checkpoint could not be written")
        self.written.append((step, record))


def test_actions_log_evaluate_save_and_keep_best(capsys):
    summaries, ckpts, best = FakeSummaries(), FakeCheckpoints(), FakeBest()
    losses = iter([3.0, 2.0, 1.0])
    log = actions.LogProgress(summaries, every=2, train_steps=9, learning_rate=lambda i: 0.1 * i)
    evaluation = actions.Evaluate(lambda: LoopStats(1, next(losses), 1.0), summaries, every=3,
                                  train_steps=9)
    save = actions.SaveCheckpoint(ckpts, every=6, train_steps=9, memories=lambda m: [m])
    throughput = actions.Throughput()
    Controller(FakeTrainer(), None, 0, 0, 10,
               [throughput, log, evaluation, save,
                actions.KeepBest(best, "char")]).run(9)
    # Log every 2 steps and at the end: mean loss of the window, lr of the window's last step.
    assert [(s, l) for s, l, _, _ in summaries.train_points] == [
        (2, 2.0), (4, 2.0), (6, 2.0), (8, 2.0), (9, 2.0)]
    assert [lr for _, _, lr, _ in summaries.train_points] == pytest.approx([.1, .3, .5, .7, .8])
    assert {g for _, _, _, g in summaries.train_points} == {0.5}
    assert summaries.valid_points == [(3, 3.0), (6, 2.0), (9, 1.0)]
    assert ckpts.saved == [(6, [6]), (9, [9])]
    # best/ only where a save and an evaluation met: steps 6 and 9, not 3.
    assert [(s, r["valid_loss"]) for s, r in best.written] == [(6, 2.0), (9, 1.0)]
    assert best.written[-1][1] == {"step": 9, "valid_loss": 1.0,
                                   "bpc": pytest.approx(1.0 / math.log(2))}
    out = capsys.readouterr().out
    assert "step 9/9 loss 2.0" in out and "valid at step 6: loss 2.0000 | bpc 2.8854" in out
    assert log.last_loss == 2.0 and evaluation.last_loss == 1.0
    assert throughput.first_loop[1] == 2.0 and throughput.tokens == 7.0  # first loop apart


def evaluated(step, valid_loss, saved=True):
    return LoopOutput(step, 1, 0.1, LoopStats(1, 1.0, 1.0), None, valid_loss, saved)


def test_keep_best_keeps_its_own_record_and_continues_the_saved_one():
    best = FakeBest(record={"step": 4, "valid_loss": 1.5, "bpc": 2.16})
    keep = actions.KeepBest(best, "word")
    keep(evaluated(6, 2.0))             # worse than best/best.json's 1.5
    keep(evaluated(7, 1.0, saved=False))  # no checkpoint at this step
    keep(evaluated(8, None))            # no evaluation at this step
    assert best.written == [] and (keep.best_step, keep.best_loss) == (4, 1.5)
    keep(evaluated(10, 1.25))
    keep(evaluated(12, 1.25))           # not below the best: best/ keeps step 10
    assert best.written == [(10, {"step": 10, "valid_loss": 1.25,
                                   "ppl": pytest.approx(math.exp(1.25))})]
    assert (keep.best_step, keep.best_loss) == (10, 1.25) and best.reads == 1
    best.fail = True
    with pytest.raises(CheckpointIOError):
        keep.consider(14, 0.5)
    assert (keep.best_step, keep.best_loss) == (10, 1.25)  # the record follows best/ only
    best.fail = False
    assert keep.consider(14, 0.5) and keep.best_step == 14


def test_keep_best_does_nothing_on_other_workers():
    best = FakeBest(is_chief=False)
    keep = actions.KeepBest(best, "char")
    keep(evaluated(6, 2.0))
    assert best.written == [] and best.reads == 0 and keep.best_loss is None
