"""Controls across real processes: concurrency limits, recurring slots."""

from __future__ import annotations

import signal

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import FailedExecution, Job, RecurringExecution
from testproject import control_tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until

from .support import Supervisor

EVERY_SECOND = {
    "recurring_tasks": {
        "every-second": {
            "task": "testproject.tasks.record",
            "schedule": "* * * * * * *",
            "args": ["tick"],
        },
    },
    "scheduler": {"polling_interval": 0.2},
}


def max_overlap(prefix: str) -> int:
    events = []
    for entry in LedgerEntry.objects.filter(key__contains=prefix):
        kind, _, label = entry.key.partition(":")
        events.append((entry.created_at, 1 if kind == "start" else -1))
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        peak = max(peak, running)
    return peak


class ControlProcessTests(TransactionTestCase):
    def test_the_limit_holds_across_three_worker_processes(self) -> None:
        """3 processes x 3 threads, a limit of 2: never more than 2 at once."""
        robust_queue.enqueue_all(
            [(control_tasks.limited, ("acct", f"lim{i}", 0.3), {}) for i in range(12)]
        )
        Supervisor(
            self,
            workers=[{"queues": ["*"], "threads": 3, "processes": 3, "polling_interval": 0.05}],
            task_modules=["testproject.control_tasks"],
        )
        wait_until(lambda: Job.objects.filter(finished_at__isnull=False).count() == 12, timeout=60)
        self.assertEqual(max_overlap("lim"), 2)

    def test_three_schedulers_enqueue_each_slot_once(self) -> None:
        supervisors = [Supervisor(self, **EVERY_SECOND) for _ in range(3)]
        for supervisor in supervisors:
            supervisor.children("scheduler")
        wait_until(lambda: RecurringExecution.objects.count() >= 4, timeout=30)
        for supervisor in supervisors:
            supervisor.send(signal.SIGTERM)
        for supervisor in supervisors:
            self.assertEqual(supervisor.wait(timeout=20), 0)
        slots = list(RecurringExecution.objects.values_list("run_at", flat=True))
        self.assertEqual(len(slots), len(set(slots)))
        jobs = Job.objects.filter(task_path="testproject.tasks.record")
        self.assertEqual(jobs.count(), len(slots), "one job per slot, whatever the schedulers")
        self.assertEqual(
            LedgerEntry.objects.filter(key="tick").count(),
            jobs.filter(finished_at__isnull=False).count(),
        )


class MaintenanceProcessTests(TransactionTestCase):
    def test_the_supervisor_clears_old_finished_jobs_and_nothing_else(self) -> None:
        from datetime import timedelta

        from django.utils import timezone

        from testproject import tasks
        from tests.helpers import work_off

        old, recent = tasks.add.enqueue(1, 1), tasks.add.enqueue(2, 2)
        failed = tasks.fail.enqueue("kept")
        work_off()
        two_days_ago = timezone.now() - timedelta(days=2)
        Job.objects.filter(result_id=old.id).update(finished_at=two_days_ago)
        # Failed jobs are kept (clear_failed_jobs_after is off), however old.
        FailedExecution.objects.update(created_at=two_days_ago)
        waiting = tasks.add.using(run_after=timezone.now() + timedelta(days=1)).enqueue(3, 3)
        Supervisor(self, maintenance_interval=0.5, clear_finished_jobs_after=3600)
        wait_until(lambda: not Job.objects.filter(result_id=old.id).exists(), timeout=30)
        self.assertEqual(
            set(Job.objects.values_list("result_id", flat=True)),
            {recent.id, failed.id, waiting.id},
        )
