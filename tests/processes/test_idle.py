"""An idle worker backs off its polling, and still picks up work."""

from __future__ import annotations

import time

from django.db import connection
from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor

WORKERS = [{"queues": ["*"], "threads": 2, "polling_interval": 0.05, "idle_polling_ceiling": 1.0}]


class IdleWorkerTests(TransactionTestCase):
    def test_pickup_after_idling_is_bounded_by_the_ceiling(self) -> None:
        """Idle long enough to reach the ceiling, then one job: it starts
        within the ceiling (at once on PostgreSQL, woken by NOTIFY)."""
        supervisor = Supervisor(self, workers=WORKERS, env={"ROBUST_QUEUE_LOG_LEVEL": "DEBUG"})
        supervisor.children("worker")
        # Logged as it starts its first ceiling-long sleep.
        wait_until(lambda: "is idle: it polls every 1.0s" in supervisor.output(), timeout=30)
        result = tasks.add.enqueue(1, 2)
        job = wait_until(
            lambda: Job.objects.filter(result_id=result.id, started_at__isnull=False).first(),
            timeout=30,
            interval=0.01,
        )
        waited = (job.started_at - job.enqueued_at).total_seconds()  # type: ignore[attr-defined]
        bound = 0.5 if connection.vendor == "postgresql" else 1.5
        self.assertLess(waited, bound)
        # Work resets the back-off: a burst right after runs at full pace.
        started = time.monotonic()
        tasks.add.enqueue(2, 3)
        wait_until(lambda: Job.objects.filter(finished_at__isnull=False).count() == 2, timeout=30)
        self.assertLess(time.monotonic() - started, bound + 0.5)
