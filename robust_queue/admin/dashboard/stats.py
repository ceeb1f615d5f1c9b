"""What the overview shows, each figure from one bounded query."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, DateTimeField, Max, Sum
from django.db.models.functions import Trunc
from django.utils import timezone

from ...models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    JobState,
    ReadyExecution,
    ScheduledExecution,
    Statistic,
)
from ...models.sql import failure_search
from ...models.sql.estimates import estimated_rows
from ...operations import counting
from ...operations.counting import CappedCount, capped_count
from ..display import ago, text
from ..masking.json_text import KeyText

FAILURE_GROUPS_LIMIT = 20
# Where no index serves them (SQLite; PostgreSQL without pg_trgm for the
# search), failure groups and the failed list's error search read this many
# of the newest failures, never the whole failed table.
RECENT_FAILURES = 5_000
# Failure groups count at most this many exception classes (in name order).
MAX_EXCEPTION_CLASSES = 100
LIVE_TABLES = {
    JobState.READY: ReadyExecution,
    JobState.SCHEDULED: ScheduledExecution,
    JobState.CLAIMED: ClaimedExecution,
    JobState.BLOCKED: BlockedExecution,
    JobState.FAILED: FailedExecution,
}


@dataclass(frozen=True, slots=True)
class FailureGroup:
    exception_class: str
    count: CappedCount
    latest: dt.datetime | None

    @property
    def count_shown(self) -> str:
        return self.count.shown

    @property
    def rank(self) -> int:
        return self.count.estimate or int(self.count)

    @property
    def latest_ago(self) -> str:
        return ago(self.latest)


@dataclass(frozen=True, slots=True)
class Bucket:
    start: dt.datetime
    finished: int
    failed: int


def state_counts(using: str) -> dict[str, CappedCount]:
    """Jobs per live state, plus finished in the last hour and day: exact
    up to the cap; past it, the planner's estimate of a state's table and
    the statistics' count of jobs finished."""
    cap = counting.DEFAULT_COUNT_CAP
    counts = {
        state.value: capped_count(model._default_manager.using(using).all(), cap, estimate=True)
        for state, model in LIVE_TABLES.items()
    }
    now = timezone.now()
    finished = Job.objects.using(using).filter(finished_at__isnull=False)
    for name, window in (
        ("finished_hour", timedelta(hours=1)),
        ("finished_day", timedelta(days=1)),
    ):
        count = capped_count(finished.filter(finished_at__gte=now - window), cap)
        counts[name] = counting.from_statistics(count, _finished_since(using, now - window))
    return counts


def _finished_since(using: str, since: dt.datetime) -> int | None:
    """Jobs finished since ``since`` (to the minute) by the statistics."""
    rows = Statistic.objects.using(using).minutes().filter(minute__gte=since)
    total = rows.aggregate(total=Sum("finished"))["total"]
    return None if total is None else int(total)


def recent_failures_bound(using: str) -> int | None:
    """The id of the ``RECENT_FAILURES``-th newest failed execution (one
    index probe); None when there are fewer failures."""
    newest = RECENT_FAILURES
    ids = FailedExecution.objects.using(using).order_by("-pk").values_list("pk", flat=True)
    found = list(ids[newest - 1 : newest])
    return found[0] if found else None


def groups_cover_all(using: str) -> bool:
    """Whether failure groups count every failure (an index serves them)."""
    return failure_search.has_class_index(using)


def failure_groups(using: str, limit: int = FAILURE_GROUPS_LIMIT) -> list[FailureGroup]:
    """Failures grouped by exception class, most frequent first: over all
    failures through the (class, id) index of 0024, each class counted up
    to the cap (then estimated on PostgreSQL); elsewhere among the newest
    ``RECENT_FAILURES`` failures."""
    classes = failure_search.exception_classes(using, MAX_EXCEPTION_CLASSES)
    if classes is None:
        return _recent_failure_groups(using, limit)
    cap = counting.DEFAULT_COUNT_CAP
    groups = [_group(using, name, cap) for name in classes]
    groups.sort(key=lambda group: (-group.rank, group.exception_class))
    return groups[:limit]


def exception_classes(using: str) -> list[str]:
    """The exception classes of the failures, for a filter's choices: all
    of them (up to ``MAX_EXCEPTION_CLASSES``) where an index serves it."""
    classes = failure_search.exception_classes(using, MAX_EXCEPTION_CLASSES)
    if classes is None:
        return [group.exception_class for group in _recent_failure_groups(using, 100)]
    return [text(name) for name in classes]


def _group(using: str, name: str, cap: int) -> FailureGroup:
    count, latest = failure_search.class_figures(using, name, cap)
    estimate = None
    if count > cap:
        estimate = estimated_rows(using, *failure_search.class_rows_sql(using, name))
    return FailureGroup(text(name), CappedCount(count, cap, estimate, counting.PLANNER), latest)


def _recent_failure_groups(using: str, limit: int) -> list[FailureGroup]:
    failures = FailedExecution.objects.using(using)
    bound = recent_failures_bound(using)
    if bound is not None:
        failures = failures.filter(pk__gte=bound)
    rows = (
        failures.values(exception_class=KeyText("exception_class_path", "error"))
        .annotate(count=Count("pk"), latest=Max("created_at"))
        .order_by("-count", "exception_class")[:limit]
    )
    return [
        FailureGroup(
            text(row["exception_class"] or ""),
            CappedCount(row["count"], RECENT_FAILURES),
            row["latest"],
        )
        for row in rows
    ]


def throughput(using: str, unit: str, buckets: int, task_path: str | None = None) -> list[Bucket]:
    """Jobs finished and attempts failed per ``unit`` ("minute"/"hour"),
    oldest first, from the recorded statistics: a failure counts when it
    happened, whatever became of its job since (retried, discarded).
    ``task_path``: that task's only."""
    step = timedelta(minutes=1) if unit == "minute" else timedelta(hours=1)
    end = _current_bucket(unit)
    start = end - step * (buckets - 1)
    rows = Statistic.objects.using(using).minutes().filter(minute__gte=start)
    if task_path is not None:
        rows = rows.filter(task_path=task_path)
    # UTC buckets: no time zone tables needed on MySQL, same on every DB.
    bucket = Trunc("minute", unit, output_field=DateTimeField(), tzinfo=dt.UTC)
    grouped = (
        rows.order_by()
        .annotate(bucket=bucket)
        .values("bucket")
        .annotate(finished=Sum("finished"), failed=Sum("failed"))
    )
    by_bucket = {
        # Sums are Decimal on MySQL/MariaDB.
        row["bucket"].astimezone(dt.UTC): (int(row["finished"]), int(row["failed"]))
        for row in grouped
    }
    return [
        Bucket(at, *by_bucket.get(at, (0, 0))) for at in (start + step * i for i in range(buckets))
    ]


def _current_bucket(unit: str) -> dt.datetime:
    now = timezone.now().astimezone(dt.UTC)
    now = now.replace(second=0, microsecond=0)
    return now.replace(minute=0) if unit == "hour" else now
