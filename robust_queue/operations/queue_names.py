"""Which queues exist, found with bounded reads only.

A queue is known from its ready jobs (one index probe per queue name: a
loose index scan, at most ``MAX_PROBES``), the soonest ``SAMPLE`` scheduled
and the oldest ``SAMPLE`` blocked jobs, the statistics' totals (every queue
an attempt ever ended on), the newest ``SAMPLE`` jobs and the pauses. None
of it reads a table through, however many jobs wait.

A queue is *used* when a task Robust Queue knows of puts jobs on it: a
declared task's queue, a backend's ``QUEUES``, a recurring task's queue,
or a queue jobs wait on (as system check W020 reads it).
"""

from __future__ import annotations

from .. import conf
from ..compat import task_backends
from ..models import (
    BlockedExecution,
    Job,
    Pause,
    ReadyExecution,
    RecurringTask,
    ScheduledExecution,
    Statistic,
)
from ..options import discovery

SAMPLE = 1000
MAX_PROBES = 100


def with_jobs(using: str) -> set[str]:
    """The queues that jobs are on, or were on lately."""
    names = ready(using)
    scheduled = ScheduledExecution.objects.using(using).order_by("scheduled_at")
    names |= set(scheduled.values_list("queue_name", flat=True)[:SAMPLE])
    blocked = BlockedExecution.objects.using(using).order_by("pk")
    names |= set(blocked.values_list("queue_name", flat=True)[:SAMPLE])
    totals = Statistic.objects.using(using).totals().values_list("queue_name", flat=True)
    names |= set(totals.distinct())
    newest = Job.objects.using(using).order_by("-pk").values_list("queue_name", flat=True)
    names |= set(newest[:SAMPLE])
    return names


def known(using: str, jobs_on: set[str] | None = None) -> set[str]:
    """Queues with jobs (``jobs_on`` if read already), and paused queues."""
    names = set(with_jobs(using) if jobs_on is None else jobs_on)
    names |= set(Pause.objects.using(using).values_list("queue_name", flat=True))
    return names


def ready(using: str) -> set[str]:
    """The queues with ready jobs: one index probe per queue name."""
    names: set[str] = set()
    rows = ReadyExecution.objects.using(using).order_by("queue_name")
    last = None
    for _ in range(MAX_PROBES):
        after = rows if last is None else rows.filter(queue_name__gt=last)
        last = after.values_list("queue_name", flat=True).first()
        if last is None:
            break
        names.add(last)
    return names


def used_by_tasks(using: str, jobs_on: set[str]) -> set[str]:
    """Queues a known task uses (declared, configured, recurring) or that
    jobs are on (``jobs_on``, from ``with_jobs``)."""
    names = {task.queue_name for task in discovery.discover().tasks()}
    for alias in conf.robust_queue_aliases():
        names |= set(task_backends[alias].queues)
    recurring = RecurringTask.objects.using(using).exclude(queue_name="")
    names |= set(recurring.values_list("queue_name", flat=True)[:SAMPLE])
    return names | jobs_on
