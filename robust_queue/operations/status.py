"""What ``robust_queue status`` shows: queues, processes, recent failures.

Read with the same bounded queries as the admin (capped counts, live tables only),
so it answers quickly at any size.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from ..models import FailedExecution, Process
from .counting import CappedCount, capped_count
from .queues import QueueRow, queue_rows

RECENT_FAILURES = 10


@dataclass(frozen=True, slots=True)
class Failure:
    failed_at: object
    result_id: str
    task_path: str
    queue_name: str
    exception: str


@dataclass(frozen=True, slots=True)
class Status:
    queues: list[QueueRow]
    processes: list[Process]
    failures: list[Failure]
    failed_total: CappedCount


def status(using: str, *, failures: int = RECENT_FAILURES) -> Status:
    recent = FailedExecution.objects.using(using).select_related("job").order_by("-pk")[:failures]
    return Status(
        queues=queue_rows(using),
        processes=list(Process.objects.using(using).order_by("hostname", "kind", "name")),
        failures=[
            Failure(
                failed_at=f.created_at,
                result_id=f.job.result_id,
                task_path=f.job.task_path,
                queue_name=f.job.queue_name,
                exception=f.exception_class_path,
            )
            for f in recent
        ],
        failed_total=capped_count(FailedExecution.objects.using(using)),
    )


def ago(moment: object) -> str:
    """``"3s ago"``, ``"2m ago"``, ``"5h ago"``."""
    if not hasattr(moment, "tzinfo"):
        return "-"
    seconds = (timezone.now() - moment).total_seconds()  # type: ignore[operator]
    return f"{short(timedelta(seconds=max(seconds, 0)))} ago"


def short(span: timedelta) -> str:
    seconds = span.total_seconds()
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"
