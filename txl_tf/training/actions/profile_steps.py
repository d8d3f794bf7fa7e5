"""`ProfileSteps`: a TensorBoard profile of training steps START to END (`--profile_steps`).

The profile (`tf.profiler.experimental.start` / `stop`) is written to
`model_dir/plugins/profile/<run>/<host>.xplane.pb`, where TensorBoard's Profile tab
(`tensorboard-plugin-profile`) reads it: trace viewer, op statistics, XLA fusions. The
controller makes START - 1 and END call boundaries (`next_boundary`), so exactly those steps run
while the profiler records (with step START = 1, the first call's tracing and XLA compilation
too).

Example:
  >>> profile = ProfileSteps("runs/x", start=2, end=3)
  >>> profile.begin(step=0)            # before the controller runs
  >>> Controller(..., actions=[profile, ...]).run(end_step)
"""
from typing import Optional

import tensorflow as tf
from absl import logging


class ProfileSteps:
    """The profiler on for steps `start`..`end` (counted from 1, both included).

    Args:
      logdir: where TensorBoard's profile plugin looks (the run's model_dir).
      start, end: the first and last profiled step.
    """
    every = 0

    def __init__(self, logdir: str, start: int, end: int):
        self.logdir, self.start, self.end = logdir, int(start), int(end)
        self.running = False

    def next_boundary(self, step: int) -> Optional[int]:
        """The next step after `step` where a call of the inner loop must end."""
        for boundary in (self.start - 1, self.end):
            if boundary > step:
                return boundary
        return None

    def begin(self, step: int) -> None:
        """Before the controller runs from `step`: start the profiler if `step` = START - 1."""
        if step == self.start - 1:
            self._start()
        elif step >= self.start:
            logging.warning("--profile_steps=%d,%d: the run resumes at step %d; nothing is "
                            "profiled", self.start, self.end, step)

    def _start(self) -> None:
        tf.profiler.experimental.start(self.logdir)
        self.running = True

    def close(self) -> None:
        """Stop the profiler if it still runs (a run that ended early)."""
        if self.running:
            tf.profiler.experimental.stop()
            self.running = False

    def __call__(self, output) -> None:
        if self.running and output.step >= self.end:
            self.close()
            print(f"profile of steps {self.start}-{self.end}: "
                  f"{self.logdir}/plugins/profile/ (TensorBoard's Profile tab)", flush=True)
        elif not self.running and output.step == self.start - 1:
            self._start()
