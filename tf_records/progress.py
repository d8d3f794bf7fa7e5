"""The progress bar of tf_records (downloads, record writing), on stderr.

One line, `label  42.0/100.0 MB  [#########                     ]  12.3 MB/s`, in the unit
of the work (MB downloaded, thousands of records written) with its rate; without a known total,
`label  42.0 MB  12.3 MB/s`. On a terminal the line is redrawn in place at most twice a second;
when stderr is a file or a pipe, one line is written at most every 10 seconds, and the last
one at the end.

`keras.utils.Progbar` is not used: it writes to stdout (where the runners print their JSON
result), counts raw units (bytes, not MB) and reports time per unit instead of a rate.
"""
import sys
import time


class Progress:
    """A text progress bar.

    Args:
      label: what is done, e.g. `download enwik8.zip`.
      total: the amount of work in raw units (e.g. bytes), or None when unknown.
      unit: the displayed unit, e.g. `MB`.
      scale: raw units per displayed unit, e.g. `1e6` for MB.
      stream: where to draw (default stderr).
      enabled: False draws nothing.

    Example:

    ```python
    bar = Progress("download enwik8.zip", total=36_445_475)
    for done in range(0, 36_445_475, 1 << 20):
        bar.update(done)
    bar.close()
    ```
    """

    def __init__(self, label, total=None, unit="MB", scale=1e6, stream=None, enabled=True):
        self.label, self.total, self.unit, self.scale = label, total, unit, scale
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = self.last = time.time()
        self.done = 0
        self.drawn = -1

    def update(self, done, total=None):
        """Records `done` raw units of work (of `total`, when given); redraws when due."""
        self.done = done
        if total is not None:
            self.total = total
        now = time.time()
        finished = bool(self.total) and done >= self.total
        if self.enabled and (now - self.last > (0.5 if self.tty else 10.0) or finished):
            self.last = now
            self._draw(now)

    def _line(self, now) -> str:
        rate = self.done / self.scale / max(now - self.start, 1e-9)
        if not self.total:
            return f"{self.label}  {self.done / self.scale:.1f} {self.unit}  {rate:.1f} {self.unit}/s"
        bar = "#" * int(min(self.done / self.total, 1.0) * 30)
        return (f"{self.label}  {self.done / self.scale:.1f}/{self.total / self.scale:.1f} "
                f"{self.unit}  [{bar:<30}]  {rate:.1f} {self.unit}/s")

    def _draw(self, now):
        if self.drawn == self.done and not self.tty:
            return  # the same line again, in a log file
        self.drawn = self.done
        self.stream.write(f"\r{self._line(now)}" if self.tty else f"{self._line(now)}\n")
        self.stream.flush()

    def close(self):
        """Draws the final state and ends the line."""
        if not self.enabled:
            return
        if self.drawn != self.done:
            self._draw(time.time())
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
