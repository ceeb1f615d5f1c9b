"""Counters and wait/run histograms per (minute, queue, task).

Rows are only ever added to: workers aggregate in memory and flush one
upsert per key every few seconds (``robust_queue.models.statistics``), and the
database adds each column to what is stored, so concurrent writers never
lose a count. Beside the per-minute rows, each (queue, task) has one
running-total row at ``TOTALS_MINUTE``: the metrics endpoint reads those
(a handful of rows, never a scan), and retention never clears them, so
Prometheus counters only grow.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext

from django.db import connections, models, transaction

from .batching import each_batch
from .clock import DatabaseNow
from .sql import Statement, dialect_for

# Upper bounds (seconds) of the histogram buckets, roughly log-spaced
# (1, 2.5, 5 per decade); a last, unbounded bucket takes the rest.
BUCKET_BOUNDS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    1800.0,
)
BUCKETS = len(BUCKET_BOUNDS) + 1
COUNTERS = ("finished", "failed", "retried", "discarded", "snoozed", "released")
WAIT_BUCKETS = tuple(f"wait_{i}" for i in range(BUCKETS))
RUN_BUCKETS = tuple(f"run_{i}" for i in range(BUCKETS))
SUMS = ("wait_seconds", "run_seconds")
# Every column a write adds to, in this order.
COLUMNS = (*COUNTERS, *SUMS, *WAIT_BUCKETS, *RUN_BUCKETS)
KEY_COLUMNS = ("minute", "queue_name", "task_path")
# The minute of the running-total rows: before any real minute.
TOTALS_MINUTE = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
# How many keys one INSERT carries.
DEFAULT_ROWS_PER_STATEMENT = 100

Key = tuple[dt.datetime, str, str]


def bucket_index(seconds: float) -> int:
    """The histogram bucket of a duration (negative counts as zero)."""
    return bisect_left(BUCKET_BOUNDS, max(seconds, 0.0))


def minute_of(at: dt.datetime) -> dt.datetime:
    """``at`` truncated to its minute, in UTC."""
    return at.astimezone(dt.UTC).replace(second=0, microsecond=0)


class StatisticQuerySet(models.QuerySet["Statistic"]):
    def add_all(self, values: Mapping[Key, Sequence[float]]) -> int:
        """Add ``values`` (one number per ``COLUMNS`` entry, by key) to the
        stored rows and to their (queue, task) totals; returns statements run.

        Keys are written in sorted order, so two writers lock rows in the
        same order and cannot deadlock each other.
        """
        rows = _with_totals(values)
        keys = sorted(rows)
        size = DEFAULT_ROWS_PER_STATEMENT
        chunks = [
            [(key, rows[key]) for key in keys[i : i + size]] for i in range(0, len(keys), size)
        ]
        # One statement is atomic by itself; several must all be written
        # or none, or keeping a failed flush for later would count twice.
        with transaction.atomic(using=self.db) if len(chunks) > 1 else nullcontext():
            with connections[self.db].cursor() as cursor:
                for chunk in chunks:
                    cursor.execute(*_upsert(self.db, chunk))
        return len(chunks)

    def minutes(self) -> StatisticQuerySet:
        """The per-minute rows (not the running totals)."""
        return self.filter(minute__gt=TOTALS_MINUTE)

    def totals(self) -> StatisticQuerySet:
        """One running-total row per (queue, task)."""
        return self.filter(minute=TOTALS_MINUTE)

    def clear_minutes_in_steps(self, older_than: dt.timedelta, batch_size: int) -> Iterator[int]:
        """Delete the per-minute rows older than ``older_than`` (by the
        database's clock), a batch per step; never the running totals."""
        old = self.minutes().filter(minute__lt=DatabaseNow() - older_than)

        def batch() -> int:
            pks = list(old.order_by("pk").values_list("pk", flat=True)[:batch_size])
            if pks:
                self.filter(pk__in=pks).delete()
            return len(pks)

        return each_batch(batch, batch_size)


class Statistic(models.Model):
    minute = models.DateTimeField()
    queue_name = models.CharField(max_length=64)
    task_path = models.CharField(max_length=255)
    finished = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    retried = models.BigIntegerField(default=0)
    discarded = models.BigIntegerField(default=0)
    snoozed = models.BigIntegerField(default=0)
    # Claims given back to ready without an outcome (a worker's stop past
    # shutdown_timeout, a claim whose answer was lost): they run again.
    released = models.BigIntegerField(default=0, db_default=0)
    wait_seconds = models.FloatField(default=0.0)
    run_seconds = models.FloatField(default=0.0)

    objects = StatisticQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_statistic"
        constraints = [
            models.UniqueConstraint(fields=list(KEY_COLUMNS), name="rq_statistic_key"),
        ]
        # One task's rows over a window: the admin's task page (0011).
        indexes = [models.Index(fields=["task_path", "minute"], name="rq_statistic_task")]
        permissions = [("view_metrics", "Can view the Prometheus metrics")]

    def __str__(self) -> str:
        return f"{self.task_path} on {self.queue_name} at {self.minute:%Y-%m-%d %H:%M}"

    def buckets(self, prefix: str) -> list[int]:
        """The non-cumulative counts of the ``wait`` or ``run`` histogram."""
        return [int(getattr(self, f"{prefix}_{i}")) for i in range(BUCKETS)]


# One column per histogram bucket, declared in a loop: 32 fields by hand
# would hide the two lists they are.
for _name in (*WAIT_BUCKETS, *RUN_BUCKETS):
    Statistic.add_to_class(_name, models.BigIntegerField(default=0))


def _with_totals(values: Mapping[Key, Sequence[float]]) -> dict[Key, list[float]]:
    rows: dict[Key, list[float]] = {key: list(numbers) for key, numbers in values.items()}
    for (_, queue_name, task_path), numbers in values.items():
        total = rows.setdefault((TOTALS_MINUTE, queue_name, task_path), [0] * len(COLUMNS))
        for index, number in enumerate(numbers):
            total[index] += number
    return rows


def _upsert(using: str, rows: list[tuple[Key, list[float]]]) -> Statement:
    """One INSERT of ``rows`` that adds to existing keys, never overwrites."""
    dialect = dialect_for(using)
    sql = dialect.upsert_adding(Statistic._meta.db_table, KEY_COLUMNS, COLUMNS, len(rows))
    adapt = dialect.connection.ops.adapt_datetimefield_value
    params: list[object] = []
    for (minute, queue_name, task_path), numbers in rows:
        params += [adapt(minute), queue_name, task_path]
        params += [
            float(n) if name in SUMS else int(n) for name, n in zip(COLUMNS, numbers, strict=True)
        ]
    return sql, params
