"""The report's time budget: every part has its own deadline, and what did not fit is listed.

A part gets its share of the whole budget plus what earlier parts left unused, never past the
end of the budget less the reserve kept for writing the report. Work inside a part (a recipe
run, a training step) checks its deadline before it starts; a compilation or a step already
running is not interrupted, so a part can end late, and the report says by how much.

Example:
  >>> budget = Budget(480, {"rates": 0.1, "recipes": 0.9})
  >>> with budget.part("rates") as part:
  ...     if part.left() < 5: part.skip("rates", "no time left")
"""
import contextlib
import time
from typing import Callable, Dict, List, Optional

RESERVE_SHARE = 0.04  # of the budget, kept for writing the report at the end


class Part:
    """One part's deadline and its notes.

    Attributes:
      name: the part's name.
      deadline: `clock()` time by which the part should end.
      skipped: [{"part", "item", "reason"}] of what this part did not run.
    """

    def __init__(self, name: str, deadline: float, clock: Callable[[], float],
                 skipped: List[dict]):
        self.name, self.deadline, self.clock, self.skipped = name, deadline, clock, skipped

    def left(self) -> float:
        """Seconds to the part's deadline (negative once past it)."""
        return self.deadline - self.clock()

    def skip(self, item: str, reason: str) -> None:
        """Records that `item` of this part did not run, and why."""
        self.skipped.append({"part": self.name, "item": item, "reason": reason})

    def slot(self, items_left: int) -> float:
        """The deadline of the next of `items_left` items sharing what is left of the part."""
        return self.clock() + max(self.left(), 0.0) / max(items_left, 1)


class Budget:
    """The budget of one report.

    Args:
      seconds: the whole budget.
      shares: {part name: share of the budget}, in the order the parts run.
      clock: seconds (time.perf_counter; tests pass a fake).
    """

    def __init__(self, seconds: float, shares: Dict[str, float],
                 clock: Callable[[], float] = time.perf_counter):
        self.seconds, self.shares, self.clock = float(seconds), dict(shares), clock
        self.start = clock()
        self.end = self.start + self.seconds * (1.0 - RESERVE_SHARE)
        self.skipped: List[dict] = []
        self.parts: Dict[str, dict] = {}
        self._planned = self.start  # where the parts so far were planned to end

    def elapsed(self) -> float:
        return self.clock() - self.start

    @contextlib.contextmanager
    def part(self, name: str):
        """The `Part` of `name`: its share of the budget from where the earlier parts were
        planned to end (time they left unused carries over; time they overran is taken from
        this part), never past the budget's end."""
        now = self.clock()
        deadline = min(self.end, self._planned + self.shares[name] * self.seconds)
        self._planned = deadline
        part = Part(name, deadline, self.clock, self.skipped)
        try:
            yield part
        finally:
            ended = self.clock()
            self.parts[name] = {"seconds": ended - now, "allowed_seconds": deadline - now,
                                "late_seconds": max(ended - deadline, 0.0)}

    def summary(self) -> dict:
        """{"budget_seconds", "elapsed_seconds", "parts": {name: seconds, allowed, late},
        "skipped": [...]} for the report."""
        return {"budget_seconds": self.seconds, "elapsed_seconds": self.elapsed(),
                "parts": self.parts, "skipped": self.skipped}


def too_late(part: Part, needed: float) -> Optional[str]:
    """The reason not to start work of `needed` seconds in `part`, or None when it fits."""
    if part.left() >= needed:
        return None
    return (f"{max(part.left(), 0.0):.1f} s left of the part's deadline, about {needed:.1f} s "
            "needed")
