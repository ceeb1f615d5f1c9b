"""The supervisor's housekeeping (retention): a slice per tick.

The supervisor's loop heartbeats, reaps and replaces children and acts on
signals; a retention pass over a large history (hundreds of thousands of
old jobs) takes minutes. So a pass is an iterator whose every step is one
short batch, and each tick advances it for a time budget only: the loop
goes on between two slices, and the pass resumes where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

Clock = Callable[[], float]


class Budget:
    """The time one slice may take, from its start."""

    def __init__(self, seconds: float, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.deadline = clock() + seconds

    def spent(self) -> bool:
        return self.clock() >= self.deadline


class Housekeeping:
    """Runs the passes ``start()`` makes, ``budget`` s per ``run()``.

    A new pass starts ``interval`` s after the last one started, once that
    one has ended. Each ``run()`` takes at least one step (so a pass ends
    whatever the budget) and stops after the step that spends the budget
    or when ``interrupted()`` says so (a signal waits for the loop). A pass
    that raises is dropped; the next starts at the next interval.
    """

    def __init__(
        self,
        start: Callable[[], Iterator[object]],
        *,
        interval: float,
        budget: float,
        clock: Clock = time.monotonic,
    ) -> None:
        self.start = start
        self.interval, self.budget, self.clock = interval, budget, clock
        self.started_at = clock()
        self._pass: Iterator[object] | None = None

    @property
    def running(self) -> bool:
        """Whether a pass has started and not ended."""
        return self._pass is not None

    def run(self, interrupted: Callable[[], bool] = lambda: False) -> bool:
        """Advance the current pass (or start one if due) for one budget;
        True if it is still unfinished."""
        if self._pass is None:
            if self.clock() - self.started_at < self.interval:
                return False
            self.started_at = self.clock()
            self._pass = self.start()
        budget = Budget(self.budget, self.clock)
        try:
            while True:
                next(self._pass)
                if budget.spent() or interrupted():
                    return True
        except StopIteration:
            self._pass = None
            return False
        except BaseException:
            self._pass = None
            raise

    def stop(self) -> None:
        """Give up the current pass (it logs where it stopped)."""
        if self._pass is not None:
            close = getattr(self._pass, "close", None)
            self._pass = None
            if close is not None:
                close()
