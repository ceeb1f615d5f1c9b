"""What `manage.py robust_queue` prints, with and without the project's LOGGING."""

from __future__ import annotations

import signal

from django.test import TransactionTestCase

from robust_queue import __version__
from robust_queue.models import Job
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor

NO_LOGGING = {"ROBUST_QUEUE_NO_LOGGING": "1"}


def finished() -> int:
    return Job.objects.filter(finished_at__isnull=False).count()


class DefaultLoggingTests(TransactionTestCase):
    def test_without_logging_the_supervisor_prints_its_story(self) -> None:
        """Banner, process starts, one line per attempt start and end, and
        shutdown progress, on stderr, with no LOGGING setting."""
        result = tasks.add.enqueue(1, 2)
        supervisor = Supervisor(self, env=NO_LOGGING)
        wait_until(lambda: finished() == 1, timeout=30)
        tasks.sleep_for.enqueue(2.5)
        wait_until(lambda: Job.objects.filter(started_at__isnull=False).count() == 2, timeout=30)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)
        output = supervisor.output()
        for expected in (
            f"Robust Queue {__version__}: supervisor in fork mode, database 'default' (",
            "  worker 1: queues *; 1 process(es) x 3 thread(s); polling 0.05s",
            "  dispatcher 1: batch 100, polling 0.1s",
            "  scheduler: not started (no recurring tasks)",
            "  pidfile: none",
            "Forked worker (pid ",
            f"Job {result.id} started: testproject.tasks.add on queue default, attempt 1",
            f"Job {result.id} successful: testproject.tasks.add",
            "waiting for 1 running job(s), ",
            "every process stopped",
        ):
            with self.subTest(expected=expected):
                self.assertIn(expected, output)
        self.assertRegex(output, r"worker-\S+ started \(pid \d+\)")
        self.assertRegex(output, r"worker-\S+ stopped")

    def test_a_job_past_the_shutdown_timeout_is_given_back_and_said(self) -> None:
        """TERM while a job sleeps past shutdown_timeout: the job goes back
        to ready, and the output says so."""
        result = tasks.sleep_for.enqueue(60)
        supervisor = Supervisor(self, env=NO_LOGGING, shutdown_timeout=1)
        wait_until(lambda: Job.objects.filter(started_at__isnull=False).exists(), timeout=30)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)
        self.assertRegex(
            supervisor.output(),
            r"worker-\S+ gave 1 unfinished job\(s\) back to ready: they will run again",
        )
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertIs(hasattr(job, "ready_execution"), True)
        self.assertIsNone(job.finished_at)

    def test_verbosity_zero_prints_warnings_only(self) -> None:
        supervisor = Supervisor(self, "-v", "0", env=NO_LOGGING)
        supervisor.children("worker")
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)
        output = supervisor.output()
        self.assertNotIn("Robust Queue ", output)
        self.assertNotIn(" INFO ", output)

    def test_verbosity_two_prints_debug(self) -> None:
        """-v 2 lowers the level to DEBUG (the INFO lines are there too)."""
        workers = [{"queues": ["*"], "polling_interval": 0.05, "idle_polling_ceiling": 0.2}]
        quiet = Supervisor(self, env=NO_LOGGING, workers=workers)
        debug = Supervisor(self, "-v", "2", env=NO_LOGGING, workers=workers)
        wait_until(lambda: "is idle: it polls every 0.2s" in debug.output(), timeout=30)
        # TERM before a supervisor has set up its handlers would just end it.
        quiet.children("worker")
        for supervisor in (quiet, debug):
            supervisor.send(signal.SIGTERM)
            self.assertEqual(supervisor.wait(timeout=30), 0)
        self.assertIn("Robust Queue ", quiet.output())
        self.assertNotIn("is idle", quiet.output())

    def test_the_projects_logging_wins(self) -> None:
        """testproject's LOGGING prints the logger name; -v 0 changes nothing."""
        supervisor = Supervisor(self, "-v", "0")
        supervisor.children("worker")
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=30), 0)
        output = supervisor.output()
        self.assertIn("INFO robust_queue.processes.supervisor Robust Queue ", output)
        # Printed once: our handler was not added beside the project's.
        self.assertEqual(output.count("Robust Queue " + __version__), 1)
