"""`Controller`: the outer training loop, compiled inner loops with periodic actions between them.

The `Trainer` runs up to `steps_per_loop` steps in one compiled call; the controller cuts the run
into such calls so that every action's interval ends at a call boundary, carries the memory from
call to call, and after each call hands a `LoopOutput` to the actions in order (log, evaluate,
save, keep best: `txl_tf/training/actions/`). An action is any callable with an `every`
attribute (its interval in steps, 0: none); it decides itself what to do at a step. With a
`Heartbeat` (`txl_tf/training/reporting/heartbeat.py`) a line comes at least every `heartbeat.seconds`:
once a loop's pace is measured, loops are cut so that each lasts about that long (their lines
carry the loss), and while a longer one runs the heartbeat says where it is.

Example:
  >>> controller = Controller(trainer, iterator, mems, step=0, steps_per_loop=50,
  ...                         actions=[log, evaluate, save])
  >>> controller.run(end_step=600)
"""
import contextlib
import dataclasses
import math
import time
from typing import Callable, List, Optional, Protocol, Sequence

from absl import logging

from txl_tf.training.reporting.heartbeat import Heartbeat
from txl_tf.training.trainer import LoopStats, Trainer


@dataclasses.dataclass
class LoopOutput:
    """One compiled call of the inner loop.

    Attributes:
      step: the global step after the call.
      num_steps: steps the call ran.
      seconds: its wall time (the first call of a process includes tracing).
      stats: what the call measured.
      mems: the per-replica memory after the call (L tensors [B, M, D] per replica).
      valid_loss: the validation loss at `step`, set by the `Evaluate` action when it ran
        (None: no evaluation at this step).
      saved: whether the `SaveCheckpoint` action saved a training checkpoint at `step`.
    """
    step: int
    num_steps: int
    seconds: float
    stats: LoopStats
    mems: list
    valid_loss: Optional[float] = None
    saved: bool = False


class Action(Protocol):
    """Something done after a call of the inner loop; `every`: its interval in steps (0: none),
    which the controller makes a call boundary."""
    every: int

    def __call__(self, output: LoopOutput) -> None:
        ...


class DivergedError(FloatingPointError):
    """The training loss became non-finite; the checkpoints saved before are kept (exit code
    1: a failure during the work)."""
    exit_code = 1


def check_finite(stats: LoopStats, step: int, loss_scale: Callable[[], float]) -> None:
    """Warn of skipped steps; raise `DivergedError` on a non-finite training loss."""
    if stats.skipped_steps:
        logging.warning("%d step(s) skipped for non-finite gradients (loss scale %.0f)",
                        stats.skipped_steps, loss_scale())
    if not math.isfinite(stats.nll_sum):
        raise DivergedError(
            f"the training loss became {stats.nll_sum} at step {step}; lower "
            "--learning_rate, raise --warmup_steps, or use --precision=float32 (the run "
            "diverged: the checkpoints saved before are kept, nothing of it is saved).")


class Controller:
    """Runs the `Trainer`'s compiled loop `steps_per_loop` steps at a time and fires actions.

    Args:
      trainer: the `Trainer` (its `train(iterator, mems, n)` is the inner loop).
      iterator: the distributed training iterator, positioned at `step`.
      mems: the per-replica memory at `step`.
      step: the global step to start from.
      steps_per_loop: most steps per compiled call.
      actions: called in order after every call.
      heartbeat: time-based progress (None: step-based only).
      clock: monotonic seconds, for the loops' wall time (tests pass a fake clock).

    Attributes:
      should_stop: asked after every call (and its actions): True ends `run` there, before
        `end_step`. Never, until the caller sets it (a stop requested by a signal:
        `txl_tf/training/interruption.py`, set by `txl_tf/commands/train.py`).
    """

    def __init__(self, trainer: Trainer, iterator, mems, step: int, steps_per_loop: int,
                 actions: Sequence[Action] = (), heartbeat: Optional[Heartbeat] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.trainer = trainer
        self.iterator = iterator
        self.mems = mems
        self.step = step
        self.steps_per_loop = steps_per_loop
        self.actions: List[Action] = list(actions)
        self.heartbeat = heartbeat
        self.clock = clock
        self.should_stop: Callable[[], bool] = lambda: False

    def _loop_length(self, end_step: int) -> int:
        """Steps of the next call: at most `steps_per_loop`, ending at the next boundary (an
        action's interval, or the step its optional `next_boundary(step)` names), and lasting
        about the heartbeat's seconds once a loop's pace was measured."""
        n = min(self.steps_per_loop, end_step - self.step)
        for action in self.actions:
            if action.every:
                n = min(n, action.every - self.step % action.every)
            boundary = getattr(action, "next_boundary", lambda step: None)(self.step)
            if boundary is not None and boundary > self.step:
                n = min(n, boundary - self.step)
        hb = self.heartbeat
        pace = hb.measured_seconds_per_step() if hb and hb.seconds else None
        if pace:
            n = min(n, max(1, int(hb.seconds / pace)))
        return n

    def run(self, end_step: int) -> int:
        """Train until `end_step` (or until `should_stop()`); returns the step reached."""
        hb = self.heartbeat
        with hb.running() if hb else contextlib.nullcontext():
            while self.step < end_step:
                n = self._loop_length(end_step)
                if hb:
                    hb.loop_started(self.step, n)
                start = self.clock()
                self.mems, stats = self.trainer.train(self.iterator, self.mems, n)
                output = LoopOutput(self.step + n, n, self.clock() - start, stats, self.mems)
                if hb:
                    hb.loop_finished(output.step, n, output.seconds)
                self.step = output.step
                check_finite(stats, self.step, lambda: float(self.trainer.loss_scale.numpy()))
                for action in self.actions:
                    action(output)
                if self.should_stop():
                    break
        return self.step


def due(step: int, every: int, last_step: Optional[int] = None) -> bool:
    """Whether an action with interval `every` fires at `step` (always at `last_step`)."""
    return bool(every and step % every == 0) or step == last_step
