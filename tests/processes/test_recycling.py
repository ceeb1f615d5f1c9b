"""Worker recycling (max_jobs, max_memory) with the real supervisor."""

from __future__ import annotations

import re
import signal
import time

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import FailedExecution, Job
from testproject import ops_tasks
from tests.helpers import wait_until

from .support import Supervisor

OPS = {"task_modules": ["testproject.ops_tasks"]}


def finished() -> int:
    return Job.objects.filter(finished_at__isnull=False).count()


class RecyclingTests(TransactionTestCase):
    def test_a_worker_is_replaced_after_max_jobs(self) -> None:
        """Each worker process runs at most max_jobs jobs, exits 0, and a
        fresh one (no crash back-off) runs the rest; nothing fails."""
        robust_queue.enqueue_all([(ops_tasks.pid, (), {}) for _ in range(7)])
        started = time.monotonic()
        supervisor = Supervisor(
            self,
            **OPS,
            workers=[{"queues": ["*"], "threads": 1, "polling_interval": 0.05, "max_jobs": 2}],
        )
        wait_until(lambda: finished() == 7, timeout=60)
        # Four workers, with no back-off between them (1, 2, 4 s otherwise).
        self.assertLess(time.monotonic() - started, 20)
        pids = list(Job.objects.values_list("return_value", flat=True))
        self.assertEqual(sorted(pids.count(p) for p in set(pids)), [1, 2, 2, 2])
        self.assertEqual(FailedExecution.objects.count(), 0)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=20), 0)
        output = supervisor.output()
        self.assertEqual(output.count("recycles (max_jobs reached: 2 job(s) claimed)"), 3)
        self.assertEqual(
            len(re.findall(r"exited with code 0; starting a fresh one now", output)), 3
        )
        self.assertNotIn("replacing it in", output)

    def test_a_leaking_worker_is_replaced_after_max_memory(self) -> None:
        """A task that keeps 150 MiB pushes its worker over max_memory: the
        worker finishes, exits 0 and a fresh (small) worker takes over."""
        Supervisor(
            self,
            **OPS,
            workers=[{"queues": ["*"], "threads": 2, "polling_interval": 0.05, "max_memory": 120}],
        )
        first = ops_tasks.leak.enqueue(150)
        wait_until(lambda: finished() == 1, timeout=60)
        leaker = ops_tasks.leak.get_result(first.id).return_value
        # The next job runs in a new process.
        second = ops_tasks.pid.enqueue()
        wait_until(lambda: finished() == 2, timeout=60)
        self.assertNotEqual(ops_tasks.pid.get_result(second.id).return_value, leaker)
        self.assertEqual(FailedExecution.objects.count(), 0)

    def test_thread_mode_recycles_by_max_jobs_too(self) -> None:
        """In thread mode the worker thread ends and a fresh one starts."""
        robust_queue.enqueue_all([(ops_tasks.pid, (), {}) for _ in range(5)])
        supervisor = Supervisor(
            self,
            "--mode",
            "thread",
            **OPS,
            workers=[{"queues": ["*"], "threads": 1, "polling_interval": 0.05, "max_jobs": 2}],
        )
        wait_until(lambda: finished() == 5, timeout=60)
        self.assertEqual(FailedExecution.objects.count(), 0)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=20), 0)
        output = supervisor.output()
        self.assertEqual(
            output.count("stopped (max_jobs reached: 2 job(s) claimed); starting a fresh one now"),
            2,
        )
