"""What the overview shows, each figure from one bounded query."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, DateTimeField, Max, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Trunc
from django.utils import timezone

from ..models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    JobState,
    Pause,
    Queue,
    ReadyExecution,
    ScheduledExecution,
)
from .counting import CappedCount, capped_count

FAILURE_GROUPS_LIMIT = 20
LIVE_TABLES = {
    JobState.READY: ReadyExecution,
    JobState.SCHEDULED: ScheduledExecution,
    JobState.CLAIMED: ClaimedExecution,
    JobState.BLOCKED: BlockedExecution,
    JobState.FAILED: FailedExecution,
}


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    size: CappedCount
    latency: timedelta
    is_paused: bool


@dataclass(frozen=True, slots=True)
class FailureGroup:
    exception_class: str
    count: int
    latest: dt.datetime | None


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
    counts["finished_day"] = capped_count(
        finished.filter(finished_at__gte=now - timedelta(days=1))
    )
    return counts


def queues(using: str) -> list[QueueRow]:
    paused = set(Pause.objects.using(using).values_list("queue_name", flat=True))
    rows = []
    for queue in Queue.all(using):
        ready = ReadyExecution.objects.using(using).filter(queue_name=queue.name)
        rows.append(
            QueueRow(
                name=queue.name,
                size=capped_count(ready),
                latency=queue.latency(),
                is_paused=queue.name in paused,
            )
        )
    return rows


def failure_groups(using: str, limit: int = FAILURE_GROUPS_LIMIT) -> list[FailureGroup]:
    """Failed jobs grouped by exception class, most frequent first."""
    rows = (
        FailedExecution.objects.using(using)
        .values(exception_class=KT("error__exception_class_path"))
        .annotate(count=Count("pk"), latest=Max("created_at"))
        .order_by("-count", "exception_class")[:limit]
    )
    return [
        FailureGroup(str(row["exception_class"] or ""), row["count"], row["latest"])
        for row in rows
    ]


def throughput(using: str, unit: str, buckets: int) -> list[Bucket]:
    """Finished and failed jobs per ``unit`` ("minute"/"hour"), oldest first."""
    step = timedelta(minutes=1) if unit == "minute" else timedelta(hours=1)
    end = _current_bucket(unit)
    start = end - step * (buckets - 1)
    finished = Job.objects.using(using).filter(finished_at__gte=start)
    failed = FailedExecution.objects.using(using).filter(created_at__gte=start)
    finished_by = _per_bucket(finished, "finished_at", unit)
    failed_by = _per_bucket(failed, "created_at", unit)
    return [
        Bucket(at, finished_by.get(at, 0), failed_by.get(at, 0))
        for at in (start + step * i for i in range(buckets))
    ]


def _current_bucket(unit: str) -> dt.datetime:
    now = timezone.now().astimezone(dt.timezone.utc)
    now = now.replace(second=0, microsecond=0)
    return now.replace(minute=0) if unit == "hour" else now


def _per_bucket(rows: QuerySet, field: str, unit: str) -> dict[dt.datetime, int]:
    # UTC buckets: no time zone tables needed on MySQL, same on every DB.
    bucket = Trunc(field, unit, output_field=DateTimeField(), tzinfo=dt.timezone.utc)
    grouped = rows.order_by().annotate(bucket=bucket).values("bucket").annotate(n=Count("pk"))
    return {row["bucket"].astimezone(dt.timezone.utc): row["n"] for row in grouped}
