"""`StepPace`: the seconds per training step, estimated before the first step and measured once
steps have run, and which of the two it is.

Before any step the only figure is the estimate from the model's FLOPs and the measured matmul
rate (`txl_tf/training/measurement/duration.py`: a lower bound). The first compiled loop of a process
includes tracing and XLA compilation, so its pace is an upper bound, kept apart; once a later
loop has finished, the pace is measured over the steps of the loops after the first. The
heartbeat, the ETA of the step log and the measured duration line all read the one `StepPace`
of a run.

Example:
  >>> pace = StepPace(estimate=0.05)
  >>> pace.seconds_per_step(), pace.source()
  (0.05, 'estimate (FLOPs)')
  >>> pace.loop_finished(10, 30.0)      # compilation included
  >>> pace.loop_finished(10, 2.0)
  >>> pace.seconds_per_step(), pace.source()
  (0.2, 'measured over 10 steps')
"""
from typing import Optional, Tuple

ESTIMATE = "estimate (FLOPs)"


class StepPace:
    """The pace of a run's steps.

    Args:
      estimate: seconds per step from the FLOPs (None: no estimate).
    """

    def __init__(self, estimate: Optional[float] = None):
        self.estimate = estimate
        self.first_loop: Optional[Tuple[int, float]] = None  # (steps, seconds), compiling
        self.steps = 0  # of the loops after the first
        self.seconds = 0.0

    def loop_finished(self, num_steps: int, seconds: float) -> None:
        """A compiled loop of `num_steps` steps lasted `seconds` (the first: with compilation)."""
        if self.first_loop is None:
            self.first_loop = (num_steps, seconds)
        else:
            self.steps += num_steps
            self.seconds += seconds

    @property
    def measured(self) -> bool:
        """Whether steps after the first loop (compilation excluded) were timed."""
        return self.steps > 0

    def measured_seconds_per_step(self) -> Optional[float]:
        """Seconds per step of the loops after the first; the first loop's (compilation
        included) until another ends; None before any loop ended."""
        if self.measured:
            return self.seconds / self.steps
        if self.first_loop is not None:
            return self.first_loop[1] / max(self.first_loop[0], 1)
        return None

    def seconds_per_step(self) -> Optional[float]:
        """`measured_seconds_per_step`, or before any loop ended the estimate (or None)."""
        measured = self.measured_seconds_per_step()
        return self.estimate if measured is None else measured

    def source(self) -> str:
        """What `seconds_per_step` is: 'estimate (FLOPs)', 'measured over the first N steps,
        compilation included' or 'measured over N steps'."""
        if self.measured:
            return f"measured over {self.steps:,} steps"
        if self.first_loop is not None:
            return f"measured over the first {self.first_loop[0]:,} steps, compilation included"
        return ESTIMATE if self.estimate is not None else "not measured yet"

    def compile_seconds(self) -> Optional[float]:
        """The first loop's seconds beyond the measured pace (tracing and compilation), once a
        later loop was measured; None before."""
        if not self.measured or self.first_loop is None:
            return None
        steps, seconds = self.first_loop
        return max(seconds - steps * self.seconds / self.steps, 0.0)
