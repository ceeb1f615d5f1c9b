"""Runtime schedules against the real supervisor: added, paused, changed
and removed while it runs, each seen within one polling interval, and each
slot enqueued once however many schedulers run."""

from __future__ import annotations

import signal

from django.test import TransactionTestCase

from robust_queue.models import Job, RecurringExecution
from robust_queue.operations.schedules import (
    add_schedule,
    change_schedule,
    pause_schedule,
    remove_schedule,
    resume_schedule,
)
from tests.helpers import wait_until

from .support import Supervisor

# No declared schedule: the scheduler starts because it is told to.
SCHEDULER = {"scheduler": {"polling_interval": 0.2, "always_start": True}}


def slots(key: str) -> int:
    return RecurringExecution.objects.filter(task_key=key).count()


def jobs_with(args: list[str]) -> int:
    return sum(job.args == args for job in Job.objects.all())


class RuntimeScheduleProcessTests(TransactionTestCase):
    def wait_for_more_slots(self, key: str, more: int) -> None:
        """Wait until ``key`` (a schedule left running) has ``more`` slots:
        the scheduler has ticked several times meanwhile."""
        target = slots(key) + more
        wait_until(lambda: slots(key) >= target, timeout=15)

    def test_schedules_edited_while_the_supervisor_runs(self) -> None:
        supervisor = Supervisor(self, **SCHEDULER)
        supervisor.children("scheduler")
        self.assertIn("scheduler: polling 0.2s", supervisor.output())
        add_schedule("clock", "testproject.tasks.record", every=1, args=["clock"])
        add_schedule("rt", "testproject.tasks.record", every=1, args=["one"])
        wait_until(lambda: slots("rt") >= 2, timeout=15)

        pause_schedule("rt")
        paused_at = slots("rt")
        self.wait_for_more_slots("clock", 3)
        # A slot whose transaction was open when the pause committed may
        # still land; none after it.
        self.assertLessEqual(slots("rt"), paused_at + 1)

        resume_schedule("rt")
        change_schedule("rt", args=["two"])
        wait_until(lambda: jobs_with(["two"]) >= 2, timeout=15)

        remove_schedule("rt")
        removed_at = slots("rt")
        self.wait_for_more_slots("clock", 3)
        self.assertLessEqual(slots("rt"), removed_at + 1)
        wait_until(lambda: not Job.objects.filter(finished_at__isnull=True).exists(), timeout=15)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=20), 0)

    def test_two_schedulers_enqueue_each_runtime_slot_once(self) -> None:
        supervisors = [Supervisor(self, **SCHEDULER) for _ in range(2)]
        for supervisor in supervisors:
            supervisor.children("scheduler")
        add_schedule("both", "testproject.tasks.record", every=1, args=["both"])
        wait_until(lambda: slots("both") >= 4, timeout=20)
        for supervisor in supervisors:
            supervisor.send(signal.SIGTERM)
        for supervisor in supervisors:
            self.assertEqual(supervisor.wait(timeout=20), 0)
        runs = list(RecurringExecution.objects.values_list("run_at", flat=True))
        self.assertEqual(len(runs), len(set(runs)))
        jobs = Job.objects.filter(task_path="testproject.tasks.record")
        self.assertEqual(jobs.count(), len(runs), "one job per slot, whatever the schedulers")
