"""A small but lifelike queue for the browser tests and the screenshots."""

from __future__ import annotations

import random
from datetime import timedelta

from django.db.models import F
from django.utils import timezone

from robust_queue.models import (
    FailedExecution,
    Job,
    Pause,
    Process,
    ProcessKind,
    RecurringTask,
    Statistic,
)
from robust_queue.models.statistic import COLUMNS, minute_of
from testproject import tasks
from tests.helpers import claim, work_off


def seed() -> None:
    """Finished and failed jobs spread over the last day, live queues, processes."""
    for i in range(40):
        tasks.add.enqueue(i, i)
    for i in range(6):
        tasks.fail.enqueue(f"payment gateway timeout #{i}")
    for _ in range(3):
        tasks.returns_set.enqueue()
    work_off()
    _spread_over_last_day()
    _statistics_over_last_day()
    for i in range(12):
        tasks.report.enqueue(i)
    for i in range(5):
        tasks.add.using(queue_name="emails").enqueue(i, 1)
    tasks.add.using(run_after=timezone.now() + timedelta(hours=2)).enqueue(9, 9)
    Pause.objects.get_or_create(queue_name="emails")
    _processes()
    RecurringTask.objects.get_or_create(
        key="nightly-report",
        defaults={
            "schedule": "0 3 * * *",
            "task_path": "testproject.tasks.report",
            "arguments": {"args": [7], "kwargs": {}},
        },
    )


def _spread_over_last_day() -> None:
    rng = random.Random(5)
    now = timezone.now()
    for job in Job.objects.filter(finished_at__isnull=False):
        minutes = rng.choice([rng.randint(0, 59), rng.randint(60, 60 * 23)])
        # Every time of the job moves with it: it waited and ran as long.
        shift = now - timedelta(minutes=minutes) - job.finished_at
        Job.objects.filter(pk=job.pk).update(
            **{
                field: F(field) + shift
                for field in ("enqueued_at", "started_at", "last_attempted_at", "finished_at")
            }
        )
    for failed in FailedExecution.objects.all():
        FailedExecution.objects.filter(pk=failed.pk).update(
            created_at=now - timedelta(minutes=rng.randint(0, 600))
        )


def _statistics_over_last_day() -> None:
    """Attempts every ten minutes of the last day, as workers record them."""
    rng = random.Random(7)
    now = timezone.now()
    values = {}
    for step in range(1, 144):
        minute = minute_of(now - timedelta(minutes=10 * step))
        for task_path, queue_name, size in (
            ("testproject.tasks.add", "default", 40),
            ("testproject.tasks.report", "reports", 12),
            ("testproject.tasks.fail", "default", 3),
        ):
            numbers = dict.fromkeys(COLUMNS, 0.0)
            finished = rng.randint(size // 2, size)
            failed = rng.randint(0, 2) if task_path.endswith("fail") else rng.randint(0, 1)
            numbers.update(
                finished=finished if not task_path.endswith("fail") else 0, failed=failed
            )
            attempts = numbers["finished"] + failed
            numbers[f"run_{rng.randint(5, 9)}"] = attempts
            numbers[f"wait_{rng.randint(2, 6)}"] = attempts
            values[(minute, queue_name, task_path)] = [numbers[c] for c in COLUMNS]
    Statistic.objects.add_all(values)


def _processes() -> None:
    supervisor = Process.objects.create(
        kind=ProcessKind.SUPERVISOR, name="supervisor-web1", pid=4100, hostname="web1"
    )
    worker = Process.objects.create(
        kind=ProcessKind.WORKER,
        name="worker-web1-1",
        pid=4101,
        hostname="web1",
        supervisor=supervisor,
        metadata={"queues": ["reports", "*"], "threads": 3},
    )
    Process.objects.create(
        kind=ProcessKind.DISPATCHER,
        name="dispatcher-web1",
        pid=4102,
        hostname="web1",
        supervisor=supervisor,
        metadata={"batch_size": 500},
        last_heartbeat_at=timezone.now() - timedelta(minutes=12),
    )
    claim(2, process=worker, queue_name="reports")
