"""Recording statistics: in memory in workers, flushed in a few upserts.

Each finalized attempt adds to an in-memory tally keyed by (minute, queue,
task) — a lock and a few additions, no database work on the job's path.
A worker flushes the tally every ``statistics_flush_interval`` seconds and
at shutdown: one INSERT ... ON CONFLICT/ON DUPLICATE KEY UPDATE that adds
every key's numbers to the stored ones (``Statistic.objects.add_all``).

Outside workers (the admin retrying or discarding, the supervisor failing
a dead worker's jobs) nothing buffers, and each recording is written at
once, one upsert per key. A failed write is logged, never raised: losing
a count must not undo the operation it counts.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from django.db import DatabaseError, connections, transaction
from django.utils import timezone

from .. import conf
from .sql.deadlocks import retry_on_lock_conflict
from .statistic import BUCKET_BOUNDS, COLUMNS, Key, Statistic, minute_of

if TYPE_CHECKING:
    from .job_row import JobRow

logger = logging.getLogger(__name__)

_INDEX = {name: index for index, name in enumerate(COLUMNS)}
_WAIT_SUM, _RUN_SUM = _INDEX["wait_seconds"], _INDEX["run_seconds"]
_WAIT_0, _RUN_0 = _INDEX["wait_0"], _INDEX["run_0"]
# The columns one attempt adds 1 to, by outcome; any other is a failure.
_FAILED = (_INDEX["failed"],)
_COUNTERS = {
    "finished": (_INDEX["finished"],),
    "snoozed": (_INDEX["snoozed"],),
    "failed": _FAILED,
    "retried": (_INDEX["failed"], _INDEX["retried"]),
}
# (wait, run) seconds of one attempt; None if it never started.
Times = tuple[float, float] | None
_last_minute: tuple[int, dt.datetime] = (-1, dt.datetime.min.replace(tzinfo=dt.UTC))


class Recorder:
    """This process's tally, per database alias; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tally: dict[str, dict[Key, list[float]]] = {}
        self._buffering = 0
        self._last_flush = time.monotonic()

    @property
    def is_buffering(self) -> bool:
        return self._buffering > 0

    def start_buffering(self) -> None:
        """Keep recordings in memory until flushed (a worker's boot)."""
        with self._lock:
            self._buffering += 1
            self._last_flush = time.monotonic()

    def stop_buffering(self) -> None:
        """Flush what is kept; the last one out writes at once again."""
        try:
            self.flush()
        finally:
            with self._lock:
                self._buffering = max(self._buffering - 1, 0)

    def add_attempt(self, using: str, key: Key, counters: tuple[int, ...], times: Times) -> None:
        """Count one attempt in ``key``'s numbers: +1 to each column of
        ``counters``, and its (wait, run) seconds if known.

        The job's thread pays for a lock and a few additions in place,
        nothing more: this runs once per attempt in every worker.
        """
        with self._lock:
            if self._buffering:
                tally = self._tally.get(using)
                if tally is None:
                    tally = self._tally[using] = {}
                numbers = tally.get(key)
                if numbers is None:
                    numbers = tally[key] = [0.0] * len(COLUMNS)
                _count(numbers, counters, times)
                return
        numbers = [0.0] * len(COLUMNS)
        _count(numbers, counters, times)
        _write(using, {key: numbers})

    def flush_if_due(self) -> int:
        """Flush if the flush interval has passed; statements run."""
        if time.monotonic() - self._last_flush < conf.get(conf.STATISTICS_FLUSH_INTERVAL):
            return 0
        return self.flush()

    def flush(self) -> int:
        """Write every kept number; on a database error keep them (raised)."""
        with self._lock:
            tally, self._tally = self._tally, {}
            self._last_flush = time.monotonic()
        statements = 0
        pending = list(tally.items())
        while pending:
            using, values = pending[0]
            try:
                statements += Statistic.objects.using(using).add_all(values)
            except DatabaseError:
                for unwritten in pending:
                    self._keep(*unwritten)
                raise
            pending.pop(0)
        return statements

    def _keep(self, using: str, values: dict[Key, list[float]]) -> None:
        with self._lock:
            kept = self._tally.setdefault(using, {})
            for key, numbers in values.items():
                _add(kept, key, dict(enumerate(numbers)))


recorder = Recorder()


def record_attempt(job: JobRow, *, using: str, outcome: str, at: dt.datetime | None = None) -> None:
    """One attempt of ``job`` ended: ``finished``, ``failed``, ``retried``
    (failed, and will run again) or ``snoozed``; with its wait and run time."""
    now = at or timezone.now()
    started = job.last_attempted_at
    times: Times = None
    if started is not None:
        run_after = job.run_after
        due = job.enqueued_at if run_after is None or run_after < job.enqueued_at else run_after
        times = ((started - due).total_seconds(), (now - started).total_seconds())
    key = (_minute(now), job.queue_name, job.task_path)
    recorder.add_attempt(using, key, _COUNTERS.get(outcome, _FAILED), times)


def record_jobs(jobs: Iterable[tuple[str, str]], *, using: str, column: str) -> None:
    """Count (queue, task) pairs in ``column`` (``retried``/``discarded``/``released``)
    this minute, written at once: one upsert row per pair."""
    minute = minute_of(timezone.now())
    counts = Counter(jobs)
    values = {
        (minute, queue_name, task_path): _numbers({_INDEX[column]: count})
        for (queue_name, task_path), count in counts.items()
    }
    if values:
        _write(using, values)


def _numbers(changes: dict[int, float]) -> list[float]:
    numbers = [0.0] * len(COLUMNS)
    for index, amount in changes.items():
        numbers[index] += amount
    return numbers


def _count(numbers: list[float], counters: tuple[int, ...], times: Times) -> None:
    for index in counters:
        numbers[index] += 1
    if times is not None:
        wait, run = times
        # A negative span (clocks apart) counts as zero, in bucket 0.
        numbers[_WAIT_SUM] += wait if wait > 0 else 0.0
        numbers[_RUN_SUM] += run if run > 0 else 0.0
        numbers[_WAIT_0 + bisect_left(BUCKET_BOUNDS, wait)] += 1
        numbers[_RUN_0 + bisect_left(BUCKET_BOUNDS, run)] += 1


def _minute(now: dt.datetime) -> dt.datetime:
    """``minute_of(now)``, kept for the minute it is: most attempts of a
    busy worker fall in the minute of the one before."""
    global _last_minute
    number = int(now.timestamp() // 60)
    cached = _last_minute
    if cached[0] != number:
        cached = _last_minute = (number, minute_of(now))
    return cached[1]


def _add(tally: dict[Key, list[float]], key: Key, changes: dict[int, float]) -> None:
    numbers = tally.get(key)
    if numbers is None:
        numbers = tally[key] = [0.0] * len(COLUMNS)
    for index, amount in changes.items():
        numbers[index] += amount


def _add_all(using: str, values: dict[Key, list[float]]) -> None:
    if not connections[using].in_atomic_block:
        # One statement in autocommit: atomic by itself.
        Statistic.objects.using(using).add_all(values)
        return
    # A savepoint inside a caller's transaction: a failure here must not
    # break it.
    with transaction.atomic(using=using):
        Statistic.objects.using(using).add_all(values)


def _write(using: str, values: dict[Key, list[float]]) -> None:
    try:
        retry_on_lock_conflict(partial(_add_all, using, values), using=using, what="Statistics")
    except DatabaseError:
        logger.exception("Recording statistics failed; these counts are lost")
