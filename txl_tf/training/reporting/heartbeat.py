"""`Heartbeat`: a console line at least every `seconds` while a compiled loop runs, whatever
`--log_steps` says.

The step-based log (`actions.LogProgress`) prints at loop boundaries; a loop of a big model on
small hardware (a recipe sized for a TPU pod, run on a CPU) can last hours. While a loop runs, a
background thread asks `tick(now)` every second; when no line was printed for `seconds`, it
prints where the run is: the loop's steps, the time spent in it, the seconds per step of the
run's `StepPace` (`txl_tf/training/measurement/step_pace.py`: measured after compilation, the first loop's
with compilation until then, or before any step finished the estimate made from the model's
FLOPs), which of them it is, and the time left. `LogProgress` shares the time of the last line
(`last_line`), so a run whose loops are short prints only its step-based lines and its
time-based ones.

Example:
  >>> heartbeat = Heartbeat(seconds=60, train_steps=400000)
  >>> with heartbeat.running():
  ...     heartbeat.loop_started(step=0, num_steps=1000)
  ...     mems, stats = trainer.train(iterator, mems, 1000)
  ...     heartbeat.loop_finished(step=1000, num_steps=1000, seconds=...)
"""
import contextlib
import threading
import time
from typing import Callable, Optional

from txl_tf.training.measurement.duration import human_duration
from txl_tf.training.measurement.step_pace import StepPace


class Heartbeat:
    """Time-based progress lines during long compiled loops.

    Args:
      seconds: longest silence (0: no heartbeat).
      train_steps: the last step of the run.
      estimate_seconds_per_step: the estimate before any step finished (e.g. from the model's
        FLOPs and the measured matmul rate), or None.
      clock: monotonic seconds (tests pass a fake clock).
      echo: prints a line (the chief: `print`; other workers: nothing).
    """

    def __init__(self, seconds: float, train_steps: int,
                 estimate_seconds_per_step: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic,
                 echo: Optional[Callable[[str], None]] = None):
        self.seconds = seconds
        self.train_steps = train_steps
        self.clock = clock
        self.echo = echo
        self.last_line = clock()
        self.pace = StepPace(estimate_seconds_per_step)
        self._loop = None  # (first step, steps, start time) of the running loop
        self._lock = threading.Lock()

    def line_printed(self) -> None:
        """Another line (the step-based log) was printed now."""
        self.last_line = self.clock()

    def loop_started(self, step: int, num_steps: int) -> None:
        with self._lock:
            self._loop = (step, num_steps, self.clock())

    def loop_finished(self, step: int, num_steps: int, seconds: float) -> None:
        with self._lock:
            self._loop = None
            self.pace.loop_finished(num_steps, seconds)

    def measured_seconds_per_step(self) -> Optional[float]:
        """Seconds per step of the finished loops (after the first, which includes tracing;
        the first alone until another ends), or None before any loop ended."""
        with self._lock:
            return self.pace.measured_seconds_per_step()

    def tick(self, now: Optional[float] = None) -> Optional[str]:
        """The line to print now, or None; prints it (with `echo`) and resets the silence."""
        now = self.clock() if now is None else now
        with self._lock:
            if not self.seconds or self._loop is None or now - self.last_line < self.seconds:
                return None
            step, num_steps, start = self._loop
            self.last_line = now
            rate, source = self.pace.seconds_per_step(), self.pace.source()
        if rate is None:
            pace = "no step has finished yet"
        else:
            pace = (f"{rate:,.3g} s per step ({source}), about "
                    f"{human_duration(rate * (self.train_steps - step))} left")
        line = (f"step {step}/{self.train_steps}: running steps {step + 1}-{step + num_steps} "
                f"for {human_duration(now - start)}; {pace}")
        if self.echo is not None:
            self.echo(line)
        return line

    @contextlib.contextmanager
    def running(self, interval: float = 1.0):
        """A daemon thread calling `tick` every `interval` seconds while the block runs (the
        silence counts from its start)."""
        self.line_printed()
        if not self.seconds:
            yield self
            return
        stop = threading.Event()

        def beat():
            while not stop.wait(interval):
                self.tick()

        thread = threading.Thread(target=beat, name="txl-heartbeat", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
