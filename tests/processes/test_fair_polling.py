"""A real worker with ``order: "round_robin"`` starts a second queue's jobs
while a flood on the first is still waiting."""

from __future__ import annotations

import time

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Job
from testproject import tasks
from tests.processes.support import Supervisor

FLOOD = 40
OTHERS = 3


class FairPollingProcessTests(TransactionTestCase):
    def test_round_robin_interleaves_a_flooded_queue_with_another(self) -> None:
        """One thread, so rounds are one claim each: they alternate between
        the queues, and the last ``other`` job starts after at most a few
        ``flood`` jobs (in strict order it would start after all 40)."""
        robust_queue.enqueue_all(
            [(tasks.timed_sleep.using(queue_name="flood"), (0.02,), {}) for _ in range(FLOOD)]
        )
        robust_queue.enqueue_all(
            [(tasks.timed_sleep.using(queue_name="other"), (0.02,), {}) for _ in range(OTHERS)]
        )
        Supervisor(
            self,
            workers=[
                {
                    "queues": ["flood", "other"],
                    "threads": 1,
                    "polling_interval": 0.05,
                    "order": "round_robin",
                }
            ],
        )
        others = Job.objects.filter(queue_name="other")
        deadline = time.monotonic() + 60
        while others.filter(finished_at__isnull=True).exists():
            self.assertLess(time.monotonic(), deadline, "the other queue's jobs never ran")
            time.sleep(0.05)
        last_other = max(job.started_at for job in others)  # type: ignore[type-var]
        flood_before = Job.objects.filter(queue_name="flood", started_at__lt=last_other).count()
        self.assertLessEqual(flood_before, OTHERS + 2)
        self.assertLess(flood_before, FLOOD)
