"""What the metrics endpoint reports, each family from bounded queries.

Nothing here scans the jobs table:

- ready jobs and latency, per known queue (``operations/queue_names.py``), as
  the admin's queue table reads them: a count over at most
  ``DEFAULT_COUNT_CAP + 1`` of the queue's rows and the age of the oldest
  of its next jobs, both through the (queue, priority, job) index; a queue
  past the cap shows the cap and says so in
  ``robust_queue_jobs_count_capped``;
- other states by queue: one query per state over at most
  ``DEFAULT_COUNT_CAP + 1`` rows of its execution table; a state past the
  cap says so in ``robust_queue_jobs_capped``;
- processes and threads: the process and claimed tables (small);
- finished/failed/retried/discarded counters and wait/run histograms: the
  running-total rows of the statistics table, one per (queue, task).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.db import connections
from django.db.models import Count, F, QuerySet

from .. import conf
from ..models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Process,
    ProcessKind,
    ReadyExecution,
    ScheduledExecution,
    Statistic,
)
from ..models.clock import database_now
from ..models.statistic import BUCKET_BOUNDS, COUNTERS
from ..operations import queue_names
from ..operations.counting import DEFAULT_COUNT_CAP, CappedCount, capped_count
from ..operations.queues import latency
from .exposition import Family

# (state label, execution model, queue column as seen from that table);
# ready jobs are counted per queue (_ready).
STATES = (
    ("scheduled", ScheduledExecution, "queue_name"),
    ("running", ClaimedExecution, "job__queue_name"),
    ("blocked", BlockedExecution, "queue_name"),
    ("failed", FailedExecution, "job__queue_name"),
)
_COUNTER_HELP = {
    "finished": "Jobs that finished successfully.",
    "failed": "Failed attempts (retried by a policy or not).",
    "retried": "Failed attempts retried by a policy, and failed jobs retried by hand.",
    "discarded": "Unfinished jobs discarded, or cancelled before they ran.",
    "snoozed": "Attempts that ended in robust_queue.Snooze (run again later).",
    "released": "Claimed jobs given back to ready unfinished (a worker's stop), to run again.",
}


def collect(using: str, cap: int = DEFAULT_COUNT_CAP) -> list[Family]:
    """Every family, read from database ``using``; counts stop at ``cap``."""
    ready = _ready(using, cap)
    jobs, capped = _jobs_by_state(using, cap, ready)
    return [
        jobs,
        capped,
        _ready_capped(ready),
        _latency(ready),
        *_processes(using),
        *_statistics(using),
    ]


def _ready(using: str, cap: int) -> dict[str, tuple[CappedCount, timedelta]]:
    """(size, latency) of every known queue, as the admin reads them."""
    now = database_now(using)
    rows = ReadyExecution.objects.using(using)
    by_queue = {}
    for name in sorted(queue_names.known(using)):
        ready = rows.filter(queue_name=name)
        by_queue[name] = (capped_count(ready, cap), latency(ready, now))
    return by_queue


def _jobs_by_state(
    using: str, cap: int, ready: dict[str, tuple[CappedCount, timedelta]]
) -> tuple[Family, Family]:
    jobs = Family(
        "robust_queue_jobs",
        "gauge",
        f"Jobs per state and queue; ready jobs are counted up to {cap} per queue, "
        f"other states over at most {cap} jobs each.",
    )
    capped = Family(
        "robust_queue_jobs_capped",
        "gauge",
        "1 if a state holds more jobs than were counted (its numbers are lower bounds).",
    )
    for name, (size, _) in ready.items():
        jobs.add(min(int(size), cap), queue=name, state="ready")
    capped.add(int(any(size.is_capped for size, _ in ready.values())), state="ready")
    for state, model, column in STATES:
        counts = capped_counts_by_queue(model._default_manager.using(using).all(), column, cap)
        for queue_name, count in sorted(counts.items()):
            jobs.add(count, queue=queue_name, state=state)
        capped.add(int(sum(counts.values()) > cap), state=state)
    return jobs, capped


def _ready_capped(ready: dict[str, tuple[CappedCount, timedelta]]) -> Family:
    family = Family(
        "robust_queue_jobs_count_capped",
        "gauge",
        "1 if a queue holds more ready jobs than the cap: its robust_queue_jobs "
        "sample shows the cap, a lower bound.",
    )
    for name, (size, _) in ready.items():
        family.add(int(size.is_capped), queue=name, state="ready")
    return family


def capped_counts_by_queue(rows: QuerySet[Any], column: str, cap: int) -> dict[str, int]:
    """Rows per queue among at most ``cap + 1`` rows of ``rows``: one
    ``SELECT queue, COUNT(*) FROM (... LIMIT cap + 1) GROUP BY queue``."""
    inner = rows.order_by().values(rq_queue=F(column))[: cap + 1]
    sql, params = inner.query.get_compiler(using=rows.db).as_sql()
    with connections[rows.db].cursor() as cursor:
        cursor.execute(
            f"SELECT capped.rq_queue, COUNT(*) FROM ({sql}) capped GROUP BY capped.rq_queue",
            params,
        )
        return {str(name): int(count) for name, count in cursor.fetchall()}


def _latency(ready: dict[str, tuple[CappedCount, timedelta]]) -> Family:
    family = Family(
        "robust_queue_queue_latency_seconds",
        "gauge",
        "Age of the oldest ready job per queue (0 when none waits), by the database's clock.",
    )
    for name, (_, age) in ready.items():
        family.add(age.total_seconds(), queue=name)
    return family


def _processes(using: str) -> list[Family]:
    alive = Family(
        "robust_queue_processes",
        "gauge",
        "Processes whose heartbeat is fresh, by kind and host.",
    )
    threads = Family("robust_queue_worker_threads", "gauge", "Threads of each live worker.")
    busy = Family(
        "robust_queue_worker_busy_threads",
        "gauge",
        "Threads of each live worker running a job (its claimed jobs).",
    )
    threshold = conf.get(conf.PROCESS_ALIVE_THRESHOLD)
    live = Process.objects.using(using).alive(threshold)
    per_host: dict[tuple[str, str], int] = defaultdict(int)
    workers = live.filter(kind=ProcessKind.WORKER).annotate(busy=Count("claimed_executions"))
    for kind, host in live.values_list("kind", "hostname"):
        per_host[(kind, host)] += 1
    for (kind, host), count in sorted(per_host.items()):
        alive.add(count, kind=kind, host=host)
    for worker in workers.order_by("name"):
        metadata = worker.metadata if isinstance(worker.metadata, dict) else {}
        size = metadata.get("threads")
        if isinstance(size, int):
            threads.add(size, worker=worker.name, host=worker.hostname)
        busy.add(getattr(worker, "busy", 0), worker=worker.name, host=worker.hostname)
    return [alive, threads, busy]


def _statistics(using: str) -> list[Family]:
    counters = {
        name: Family(f"robust_queue_jobs_{name}_total", "counter", _COUNTER_HELP[name])
        for name in COUNTERS
    }
    wait = Family(
        "robust_queue_job_wait_seconds",
        "histogram",
        "Time from enqueue (or due time) to the start of an attempt.",
    )
    run = Family("robust_queue_job_run_seconds", "histogram", "Run time of an attempt.")
    for row in Statistic.objects.using(using).totals().order_by("queue_name", "task_path"):
        labels = {"queue": row.queue_name, "task": row.task_path}
        for name, family in counters.items():
            family.add(getattr(row, name), **labels)
        wait.add_histogram(BUCKET_BOUNDS, row.buckets("wait"), row.wait_seconds, **labels)
        run.add_histogram(BUCKET_BOUNDS, row.buckets("run"), row.run_seconds, **labels)
    return [*counters.values(), wait, run]
