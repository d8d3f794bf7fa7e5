"""`MeasuredDuration`: once: the duration line with the measured seconds per step."""
from typing import Optional

from absl import logging

from txl_tf.training.measurement import duration
from txl_tf.training.controller import LoopOutput
from txl_tf.training.measurement.step_pace import StepPace


class MeasuredDuration:
    """Once, after the first loop that follows the compiling one: `duration.measured_line`
    (the measured seconds per step in place of the FLOP estimate).

    Args:
      pace: the run's `StepPace` (fed by the controller's heartbeat before the actions run).
      train_steps: the last step of the run.
      echo: print the line (the chief); every worker logs it.
    """
    every = 0

    def __init__(self, pace: StepPace, train_steps: int, echo: bool = True):
        self.pace = pace
        self.train_steps = train_steps
        self.echo = echo
        self.line: Optional[str] = None

    def __call__(self, output: LoopOutput) -> None:
        if self.line is not None or not self.pace.measured:
            return
        self.line = duration.measured_line(self.pace, self.train_steps - output.step)
        logging.info(self.line)
        if self.echo:
            print(self.line, flush=True)
