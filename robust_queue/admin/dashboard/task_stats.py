"""Per task: run time and wait percentiles, throughput, failure rate.

Read from the recorded statistics (``Statistic``: counters and wait/run
histograms per minute, queue and task), never from the jobs table: one
aggregate over the window's rows (the ``(task_path, minute)`` index for
one task, the minute range for the overview's top tasks). Percentiles are
read off the histograms, interpolated within a bucket as Prometheus'
``histogram_quantile`` does: "≈ 120 ms"; past the last bound they say
"> 30 min".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F, Sum
from django.utils import timezone

from ...models import Statistic
from ...models.statistic import BUCKET_BOUNDS, COUNTERS, RUN_BUCKETS, WAIT_BUCKETS
from ..display import duration

WINDOWS = (("Last hour", timedelta(hours=1)), ("Last day", timedelta(days=1)))
TOP_TASKS = 10
_SUMMED = (*COUNTERS, *WAIT_BUCKETS, *RUN_BUCKETS)


@dataclass(frozen=True, slots=True)
class TaskFigures:
    """What the statistics say of one task over one window."""

    window: timedelta
    finished: int = 0
    failed: int = 0
    retried: int = 0
    discarded: int = 0
    snoozed: int = 0
    # Given back unfinished at a worker's stop: not an attempt's outcome.
    released: int = 0
    wait: tuple[int, ...] = ()
    run: tuple[int, ...] = ()

    @property
    def attempts(self) -> int:
        # A snoozed run ran too: it counts as an attempt, not a failure.
        return self.finished + self.failed + self.snoozed

    @property
    def failure_rate(self) -> str:
        return f"{self.failed / self.attempts:.1%}" if self.attempts else "—"

    @property
    def throughput(self) -> str:
        """Jobs finished per minute (per hour below one a minute),
        averaged over the window."""
        per_minute = self.finished / (self.window.total_seconds() / 60)
        if per_minute < 1:
            return f"{per_minute * 60:,.1f}/h"
        return f"{per_minute:,.1f}/min" if per_minute < 100 else f"{per_minute:,.0f}/min"

    @property
    def run_p50(self) -> str:
        return shown_quantile(self.run, 0.5)

    @property
    def run_p95(self) -> str:
        return shown_quantile(self.run, 0.95)

    @property
    def wait_p50(self) -> str:
        return shown_quantile(self.wait, 0.5)

    @property
    def wait_p95(self) -> str:
        return shown_quantile(self.wait, 0.95)


def figures(using: str, task_path: str) -> list[tuple[str, TaskFigures]]:
    """``task_path``'s figures over each of ``WINDOWS``."""
    now = timezone.now()
    rows = Statistic.objects.using(using).minutes().filter(task_path=task_path)
    return [
        (label, _figures(window, rows.filter(minute__gte=now - window).aggregate(**_sums())))
        for label, window in WINDOWS
    ]


def top_tasks(
    using: str, window: timedelta = WINDOWS[0][1], limit: int = TOP_TASKS
) -> list[tuple[str, TaskFigures]]:
    """The ``limit`` tasks with the most attempts over ``window``."""
    since = timezone.now() - window
    rows = (
        Statistic.objects.using(using)
        .minutes()
        .filter(minute__gte=since)
        .values("task_path")
        .annotate(**_sums())
        .order_by(-(F("total_finished") + F("total_failed")), "task_path")[:limit]
    )
    return [(row["task_path"], _figures(window, row)) for row in rows]


def busiest(using: str, limit: int = TOP_TASKS) -> list[tuple[str, list[tuple[str, TaskFigures]]]]:
    """The ``limit`` tasks with the most attempts over the longest of
    ``WINDOWS``, each with its figures over every window, as ``figures``."""
    (*shorter, (longest_label, longest)) = WINDOWS
    tasks = top_tasks(using, longest, limit)
    paths = [path for path, _ in tasks]
    by_window = [(label, window, _by_task(using, window, paths)) for label, window in shorter]
    rows = []
    for path, figures in tasks:
        windows = [
            (label, found.get(path, TaskFigures(window))) for label, window, found in by_window
        ]
        rows.append((path, [*windows, (longest_label, figures)]))
    return rows


def _by_task(using: str, window: timedelta, paths: list[str]) -> dict[str, TaskFigures]:
    """The figures over ``window`` of each of ``paths`` that has any."""
    if not paths:
        return {}
    rows = (
        Statistic.objects.using(using)
        .minutes()
        .filter(minute__gte=timezone.now() - window, task_path__in=paths)
        .values("task_path")
        .annotate(**_sums())
        .order_by("task_path")
    )
    return {row["task_path"]: _figures(window, row) for row in rows}


def quantile(counts: tuple[int, ...], q: float) -> float | None:
    """The ``q`` quantile (seconds) of a histogram; None past the last bound.

    Raises ``ValueError`` for an empty histogram."""
    total = sum(counts)
    if total <= 0:
        raise ValueError("no observations")
    rank, seen = q * total, 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            if index >= len(BUCKET_BOUNDS):
                return None
            lower = BUCKET_BOUNDS[index - 1] if index else 0.0
            return lower + (BUCKET_BOUNDS[index] - lower) * (rank - seen) / count
        seen += count
    return None  # pragma: no cover - rank <= total


def shown_quantile(counts: tuple[int, ...], q: float) -> str:
    if not counts or sum(counts) <= 0:
        return "—"
    value = quantile(counts, q)
    if value is None:
        return f"> {duration(timedelta(seconds=BUCKET_BOUNDS[-1]))}"
    return f"≈ {seconds(value)}"


def seconds(value: float) -> str:
    """A duration in seconds as "12 ms", "2.5 s", "4 min 5 s"."""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 10:
        return f"{value:.1f} s"
    return duration(timedelta(seconds=round(value)))


def _sums() -> dict[str, Any]:
    # Named apart from the model's fields: Django refuses an annotation
    # that shadows one.
    return {f"total_{name}": Sum(name) for name in _SUMMED}


def _figures(window: timedelta, row: dict[str, Any]) -> TaskFigures:
    # Sums are None over no rows, and Decimal on MySQL/MariaDB.
    value = {name: int(row.get(f"total_{name}") or 0) for name in _SUMMED}
    return TaskFigures(
        window=window,
        **{name: value[name] for name in COUNTERS},
        wait=tuple(value[name] for name in WAIT_BUCKETS),
        run=tuple(value[name] for name in RUN_BUCKETS),
    )
