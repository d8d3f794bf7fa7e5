"""`LogProgress`: the training line and scalars every `every` steps (and after the
heartbeat's silence)."""
from typing import Callable, Optional

from txl_tf.training.controller import LoopOutput, due
from txl_tf.training.reporting.heartbeat import Heartbeat
from txl_tf.training.measurement.step_pace import StepPace
from txl_tf.training.reporting.tensorboard import RunSummaries


class LogProgress:
    """Console line (chief) and training scalars every `every` steps, at `train_steps`, and
    where a loop ends when waiting for the next one would leave the console silent longer than
    the heartbeat's `seconds`.

    Args:
      summaries: the run's TensorBoard writers.
      every: log interval in steps.
      train_steps: the last step of the run (its line shows `step/train_steps` and the ETA).
      learning_rate: step index -> learning rate of that update.
      echo: print the line (the chief); every worker logs it.
      heartbeat: the run's `Heartbeat` (time-based lines; it keeps the time of the last line
        and the run's `StepPace`, which the ETA reads; without one, the log keeps its own).
    """

    def __init__(self, summaries: RunSummaries, every: int, train_steps: int,
                 learning_rate: Callable[[int], float], echo: bool = True,
                 heartbeat: Optional[Heartbeat] = None):
        self.summaries = summaries
        self.every = every
        self.train_steps = train_steps
        self.learning_rate = learning_rate
        self.echo = echo
        self.heartbeat = heartbeat
        self.pace = heartbeat.pace if heartbeat is not None else StepPace()
        self.last_step: Optional[int] = None
        self.last_loss: Optional[float] = None
        self._reset()

    def _due(self, output: LoopOutput) -> bool:
        """The step-based interval ends, or another loop as long as this one would leave the
        console silent for longer than the heartbeat's seconds."""
        hb = self.heartbeat
        return due(output.step, self.every, self.train_steps) or bool(
            hb and hb.seconds and hb.clock() - hb.last_line + output.seconds >= hb.seconds)

    def _reset(self) -> None:
        self.nll = self.tokens = self.grad_norm = self.seconds = 0.0
        self.steps = 0

    def __call__(self, output: LoopOutput) -> None:
        if self.heartbeat is None:  # else the controller told the heartbeat's pace
            self.pace.loop_finished(output.num_steps, output.seconds)
        self.nll += output.stats.nll_sum
        self.tokens += output.stats.tokens
        self.grad_norm += output.stats.grad_norm_sum
        self.steps += output.num_steps
        self.seconds += output.seconds
        if not self._due(output):
            return
        step, loss = output.step, self.nll / max(self.tokens, 1.0)
        tokens_per_sec = self.tokens / max(self.seconds, 1e-9)
        lr = self.learning_rate(step - 1)
        self.summaries.train(step, loss, lr, self.grad_norm / self.steps, tokens_per_sec)
        eta = self.pace.seconds_per_step() * (self.train_steps - step)
        note = {} if self.pace.measured else {"eta_note": "compilation included"}
        line = self.summaries.console(step, self.train_steps, loss, lr, tokens_per_sec, eta,
                                      **note)
        if self.echo:
            print(line, flush=True)
        if self.heartbeat is not None:
            self.heartbeat.line_printed()
        self.last_step, self.last_loss = step, loss
        self._reset()
