"""Working through many rows a batch at a time, each batch short-lived.

Long deletes and bulk operations run as many small transactions so that
they never hold many locks, nor one lock for long.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

logger = logging.getLogger(__name__)

# A pass over at least this many rows says what it does and how far it got.
LARGE = 10_000
# A long pass reports its progress at most this often (seconds).
PROGRESS_EVERY = 10.0

Report = Callable[..., object]


def drain(batch: Callable[[], int], size: int) -> int:
    """Run ``batch`` until it handles fewer than ``size`` rows; the total.

    ``batch`` does one batch (typically one transaction) of at most
    ``size`` rows and returns how many it handled.
    """
    return sum(each_batch(batch, size))


def each_batch(batch: Callable[[], int], size: int) -> Iterator[int]:
    """``drain()`` a step at a time: yields what each batch handled.

    Nothing is held between two steps (each batch is its own
    transaction), so the caller may stop after any and resume later.
    """
    while True:
        handled = batch()
        yield handled
        if handled < size:
            return


class Progress:
    """What a long pass does, how far it got and what it did, in the log
    (or ``report``, called like ``logger.info``).

    A pass over ``LARGE`` rows or more (``total``, when it was counted, or
    once it has done that many) says so and logs its progress at most
    every ``every`` s; a smaller one logs only its summary, and only if
    it did something and ``summary`` is set (routine upkeep every minute
    is not news). ``more``: the count stopped at ``total``, there may be
    more.
    """

    def __init__(
        self,
        what: str,
        total: int | None = None,
        *,
        report: Report | None = None,
        summary: bool = True,
        more: bool = False,
        every: float = PROGRESS_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.total, self.done = what, total, 0
        self.report: Report = report or logger.info
        self.summary, self.every, self.clock = summary, every, clock
        self._started = self._reported = clock()
        if self.large:
            self.report("Clearing %s%d %s, in batches", "more than " if more else "", total, what)
        # Progress against a total only when it is the real one.
        self._of = None if more else total

    @property
    def large(self) -> bool:
        return max(self.total or 0, self.done) >= LARGE

    def track(self, steps: Iterable[int]) -> Iterator[int]:
        """``steps`` (rows per batch), counted; the summary once they end,
        or where they stopped if the caller gave up on them."""
        try:
            for handled in steps:
                self.add(handled)
                yield handled
        except GeneratorExit:
            if self.large:
                self.report("Clearing %s stopped after %d row(s)", self.what, self.done)
            raise
        self.finish()

    def add(self, handled: int) -> None:
        self.done += handled
        now = self.clock()
        if self.large and now - self._reported >= self.every:
            self._reported = now
            rate = self.done / max(now - self._started, 1e-9)
            if self._of is None:
                self.report("Clearing %s: %d so far, %.0f/s", self.what, self.done, rate)
                return
            share = 100.0 * self.done / max(self._of, 1)
            self.report(
                "Clearing %s: %d of %d done (%.0f%%), %.0f/s",
                *(self.what, self.done, self._of, share, rate),
            )

    def finish(self) -> None:
        if self.large or (self.summary and self.done):
            took = self.clock() - self._started
            self.report("Cleared %d %s in %.1f s", self.done, self.what, took)


def id_batches(rows: QuerySet[Any], size: int) -> Iterator[list[int]]:
    """The primary keys of ``rows`` in ascending batches of ``size``.

    Each batch is read when it is asked for, after the last key of the
    one before (keyset paging): rows that the caller deleted or changed
    meanwhile do not shift the next batch.
    """
    ids = rows.order_by("pk").values_list("pk", flat=True)
    last = None
    while True:
        page = ids if last is None else ids.filter(pk__gt=last)
        batch = list(page[:size])
        if not batch:
            return
        yield batch
        last = batch[-1]
