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
from ...operations.counting import CappedCount, capped_count
from ..display import ago, number, text
from ..masking.json_text import KeyText

FAILURE_GROUPS_LIMIT = 20
# Failure groups and the failed list's error search read this many of the
# newest failures, never the whole failed table.
RECENT_FAILURES = 5_000
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
    count: int
    latest: dt.datetime | None

    @property
    def count_shown(self) -> str:
        return number(self.count)

    @property
    def latest_ago(self) -> str:
        return ago(self.latest)


@dataclass(frozen=True, slots=True)
class Bucket:
    start: dt.datetime
    finished: int
    failed: int


def state_counts(using: str) -> dict[str, CappedCount]:
    """Jobs per live state, plus finished in the last hour and day."""
    counts = {
        state.value: capped_count(model._default_manager.using(using).all())
        for state, model in LIVE_TABLES.items()
    }
    now = timezone.now()
    finished = Job.objects.using(using).filter(finished_at__isnull=False)
    counts["finished_hour"] = capped_count(
        finished.filter(finished_at__gte=now - timedelta(hours=1))
    )
    counts["finished_day"] = capped_count(finished.filter(finished_at__gte=now - timedelta(days=1)))
    return counts


def recent_failures_bound(using: str) -> int | None:
    """The id of the ``RECENT_FAILURES``-th newest failed execution (one
    index probe); None when there are fewer failures."""
    newest = RECENT_FAILURES
    ids = FailedExecution.objects.using(using).order_by("-pk").values_list("pk", flat=True)
    found = list(ids[newest - 1 : newest])
    return found[0] if found else None


def failure_groups(using: str, limit: int = FAILURE_GROUPS_LIMIT) -> list[FailureGroup]:
    """The newest ``RECENT_FAILURES`` failed jobs grouped by exception
    class, most frequent first: at most that many rows are read."""
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
        FailureGroup(text(row["exception_class"] or ""), row["count"], row["latest"])
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
