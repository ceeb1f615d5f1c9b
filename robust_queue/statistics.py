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
from collections import Counter
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from django.db import DatabaseError, connections, transaction
from django.utils import timezone

from . import conf
from .deadlocks import retry_on_lock_conflict
from .models.statistic import COLUMNS, Key, Statistic, bucket_index, minute_of

if TYPE_CHECKING:
    from .models import Job

logger = logging.getLogger(__name__)

_INDEX = {name: index for index, name in enumerate(COLUMNS)}
_WAIT_SUM, _RUN_SUM = _INDEX["wait_seconds"], _INDEX["run_seconds"]
_WAIT_0, _RUN_0 = _INDEX["wait_0"], _INDEX["run_0"]


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

    def add(self, using: str, key: Key, changes: dict[int, float]) -> None:
        """Add ``changes`` (column index -> amount) to ``key``'s numbers."""
        with self._lock:
            if self._buffering:
                _add(self._tally.setdefault(using, {}), key, changes)
                return
        _write(using, {key: _numbers(changes)})

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


def record_attempt(job: Job, *, using: str, outcome: str, at: dt.datetime | None = None) -> None:
    """One attempt of ``job`` ended: ``finished``, ``failed``, ``retried``
    (failed, and will run again) or ``snoozed``; with its wait and run time."""
    now = at or timezone.now()
    counter = outcome if outcome in ("finished", "snoozed") else "failed"
    changes: dict[int, float] = {_INDEX[counter]: 1}
    if outcome == "retried":
        changes[_INDEX["retried"]] = 1
    started = job.last_attempted_at
    if started is not None:
        due = max(job.enqueued_at, job.run_after) if job.run_after else job.enqueued_at
        wait = (started - due).total_seconds()
        run = (now - started).total_seconds()
        changes[_WAIT_SUM] = max(wait, 0.0)
        changes[_RUN_SUM] = max(run, 0.0)
        changes[_WAIT_0 + bucket_index(wait)] = 1
        changes[_RUN_0 + bucket_index(run)] = 1
    recorder.add(using, (minute_of(now), job.queue_name, job.task_path), changes)


def record_jobs(jobs: Iterable[tuple[str, str]], *, using: str, column: str) -> None:
    """Count (queue, task) pairs in ``column`` (``retried``/``discarded``)
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
