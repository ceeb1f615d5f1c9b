"""The overview's queue table: every known queue, who serves it, truthfully.

A queue is known from its jobs, a pause, or a live worker's selector naming
it (``queue_names.py``, bounded reads). Each row says how many live workers
poll it and how many of their threads are busy, and a status: "Paused",
"No worker" (no live worker's selector matches it), "Saturated" (every
thread of its workers is busy while jobs wait) or "Running"; a queue that
only a worker names and no known task uses is flagged (system check W020).
Latency is the age of the oldest of the next ``LATENCY_SAMPLE`` jobs to
run, and heartbeats' age, by the database's clock: the one clock every
comparison between rows written by different hosts uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Min, QuerySet

from .. import conf
from ..models import ClaimedExecution, Pause, Process, ProcessKind, ReadyExecution
from ..models.clock import database_now
from ..options.validation import is_valid_queue_name
from . import queue_names
from .counting import CappedCount, capped_count
from .formatting import duration, text

# Latency reads the age of at most this many of a queue's next jobs.
LATENCY_SAMPLE = 10_000


@dataclass(frozen=True, slots=True)
class Worker:
    selectors: tuple[str, ...]
    threads: int
    busy: int

    def polls(self, queue: str) -> bool:
        return any(
            s == "*" or s == queue or (s.endswith("*") and queue.startswith(s[:-1]))
            for s in self.selectors
        )


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    size: CappedCount
    latency: timedelta
    is_paused: bool
    workers: int
    threads: int
    busy: int
    running: int
    is_used: bool = True

    @property
    def has_valid_name(self) -> bool:
        """Whether the queue may be paused (old rows may hold any name)."""
        return is_valid_queue_name(self.name)

    @property
    def latency_shown(self) -> str:
        return duration(self.latency)

    @property
    def status(self) -> str:
        if self.is_paused:
            return "Paused"
        if not self.workers:
            return "No worker"
        if self.threads and self.busy >= self.threads and self.size:
            return "Saturated"
        return "Running"


def queue_rows(using: str) -> list[QueueRow]:
    now = database_now(using)
    workers = live_workers(using, now)
    paused = set(Pause.objects.using(using).values_list("queue_name", flat=True))
    running = running_per_queue(using)
    jobs_on = queue_names.with_jobs(using)
    used = queue_names.used_by_tasks(using, jobs_on)
    names = queue_names.known(using, jobs_on)
    for worker in workers:
        names |= {s for s in worker.selectors if not s.endswith("*")}
    return [
        _row(using, name, name in paused, workers, running.get(name, 0), now, name in used)
        for name in sorted(names)
    ]


def live_workers(using: str, now: datetime) -> list[Worker]:
    """Workers whose heartbeat is younger than the alive threshold at
    ``now`` (the database's clock) and that claim: one asked to quiet or
    stop from the admin (``Process.command``) serves no queue any more."""
    since = now - conf.alive_threshold()
    rows = (
        Process.objects.using(using)
        .filter(kind=ProcessKind.WORKER, last_heartbeat_at__gte=since, command__isnull=True)
        .annotate(busy=Count("claimed_executions"))
    )
    return [_worker(row.metadata, getattr(row, "busy", 0)) for row in rows]


def _worker(metadata: Any, busy: int) -> Worker:
    metadata = metadata if isinstance(metadata, dict) else {}
    selectors = metadata.get("queues", ["*"])
    selectors = selectors if isinstance(selectors, list) else [selectors]
    threads = metadata.get("threads")
    return Worker(
        tuple(str(s) for s in selectors), threads if isinstance(threads, int) else 0, busy
    )


def _row(
    using: str,
    name: str,
    is_paused: bool,
    workers: list[Worker],
    running: int,
    now: datetime,
    is_used: bool,
) -> QueueRow:
    serving = [worker for worker in workers if worker.polls(name)]
    ready = ReadyExecution.objects.using(using).filter(queue_name=name)
    return QueueRow(
        name=text(name),
        size=capped_count(ready),
        latency=latency(ready, now),
        is_paused=is_paused,
        workers=len(serving),
        threads=sum(worker.threads for worker in serving),
        busy=sum(worker.busy for worker in serving),
        running=running,
        is_used=is_used,
    )


def latency(ready: QuerySet[ReadyExecution], now: datetime) -> timedelta:
    """Age at ``now`` of the oldest of the next ``LATENCY_SAMPLE`` jobs
    (claim order, through the queue's poll index); zero if none wait."""
    next_jobs = ready.order_by("-priority", "fair_round", "job_id")[:LATENCY_SAMPLE]
    oldest = next_jobs.aggregate(oldest=Min("created_at"))["oldest"]
    return max(now - oldest, timedelta(0)) if oldest else timedelta(0)


def running_per_queue(using: str) -> dict[str, int]:
    """Jobs running now per queue (the claimed table is small)."""
    rows = (
        ClaimedExecution.objects.using(using)
        .values("job__queue_name")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return {row["job__queue_name"]: row["n"] for row in rows}
