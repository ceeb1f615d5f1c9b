"""A real worker leaves a paused task's jobs ready and runs them on resume."""

from __future__ import annotations

from django.test import TransactionTestCase

from robust_queue.models import Job, TaskPause
from testproject import tasks
from tests.helpers import wait_until
from tests.processes.support import Supervisor


def _finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


class TaskPauseProcessTests(TransactionTestCase):
    def test_a_paused_tasks_job_waits_while_others_run_and_runs_on_resume(self) -> None:
        TaskPause.objects.pause("testproject.tasks.add")
        held = tasks.add.enqueue(1, 1)
        other = tasks.echo.enqueue("runs")
        Supervisor(self)
        wait_until(lambda: _finished(other.id), timeout=30)
        # A job enqueued after the held one finishing proves a later poll
        # (the worker knew of the pause from its first read).
        later = tasks.echo.enqueue("later")
        wait_until(lambda: _finished(later.id), timeout=30)
        self.assertEqual(tasks.add.get_result(held.id).status, "READY")
        TaskPause.objects.resume("testproject.tasks.add")
        wait_until(lambda: _finished(held.id), timeout=30)
        self.assertEqual(tasks.add.get_result(held.id).return_value, 2)

    def test_a_pause_while_the_worker_runs_holds_the_next_jobs(self) -> None:
        """The worker read no task pause; the claim reads it again."""
        Supervisor(self)
        first = tasks.add.enqueue(1, 1)
        wait_until(lambda: _finished(first.id), timeout=30)
        TaskPause.objects.pause("testproject.tasks.add")
        held = tasks.add.enqueue(2, 2)
        # Enqueued after the held job: it runs once the worker has read the
        # pause (the claim stops meanwhile), so it finishing proves polls
        # both before and after that read.
        later = tasks.echo.enqueue("later")
        wait_until(lambda: _finished(later.id), timeout=30)
        self.assertEqual(tasks.add.get_result(held.id).status, "READY")
        TaskPause.objects.resume("testproject.tasks.add")
        wait_until(lambda: _finished(held.id), timeout=30)
