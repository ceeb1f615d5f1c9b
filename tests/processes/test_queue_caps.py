"""Two worker processes of several threads each never run more than a
capped queue's max_concurrency of its jobs at once.

Each process has fewer threads than the cap, so reaching it takes both.
"""

from __future__ import annotations

import time

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import ClaimedExecution, Job
from testproject import tasks
from tests.processes.support import Supervisor

CAP = 3
JOBS = 18


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant (an end before a start)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


class QueueCapProcessTests(TransactionTestCase):
    def test_two_worker_processes_share_the_cap(self) -> None:
        robust_queue.enqueue_all(
            [(tasks.timed_sleep.using(queue_name="mail"), (0.3,), {}) for _ in range(JOBS)]
        )
        robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(6)])
        Supervisor(
            self,
            workers=[{"queues": ["*"], "threads": 2, "processes": 2, "polling_interval": 0.05}],
            queues={"mail": {"max_concurrency": CAP}},
        )
        samples: list[int] = []
        deadline = time.monotonic() + 90
        while Job.objects.filter(finished_at__isnull=True).exists():
            self.assertLess(time.monotonic(), deadline, "the jobs never finished")
            samples.append(ClaimedExecution.objects.filter(job__queue_name="mail").count())
            time.sleep(0.01)
        mail = Job.objects.filter(queue_name="mail")
        bodies = [tuple(job.return_value) for job in mail]
        workers = {job.worker_ids[0] for job in mail}
        self.assertEqual(len(bodies), JOBS)
        self.assertLessEqual(max(samples), CAP)
        self.assertEqual(_max_overlap(bodies), CAP)  # type: ignore[arg-type]
        self.assertEqual(len(workers), 2, f"both worker processes ran mail jobs: {workers}")
        self.assertFalse(Job.objects.filter(queue_name="default", finished_at=None).exists())
