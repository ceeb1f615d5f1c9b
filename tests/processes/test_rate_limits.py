"""Real worker and dispatcher processes keep a rate limit of 2 jobs per
2-second window and run every job."""

from __future__ import annotations

import time

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Job
from testproject import coordination_tasks as co
from tests.processes.support import Supervisor

JOBS = 10
TO = 2
PER = 2.0


class RateLimitProcessTests(TransactionTestCase):
    def test_jobs_start_at_most_to_per_window_and_all_run(self) -> None:
        """Every start counts in its window (the worker starts late ones
        again), so job i and job i + 2*TO (by start) start in windows two
        apart: more than a window apart, less the few ms from the count to
        the body (half a window of slack for a loaded machine). The jobs
        were enqueued before any worker ran: late starts are certain."""
        robust_queue.enqueue_all([(co.rated_per_two_seconds, (n,), {}) for n in range(JOBS)])
        Supervisor(
            self,
            task_modules=["testproject.coordination_tasks"],
            dispatchers=[{"batch_size": 100, "polling_interval": 0.05}],
        )
        deadline = time.monotonic() + 90
        while Job.objects.filter(finished_at__isnull=True).exists():
            self.assertLess(time.monotonic(), deadline, "the rate-limited jobs never all ran")
            time.sleep(0.1)
        starts = sorted(job.return_value[0] for job in Job.objects.all())
        self.assertEqual(len(starts), JOBS)
        # Pairs (start i, start i + 2*TO): the shorter list ends the zip.
        gaps = [later - earlier for earlier, later in zip(starts, starts[2 * TO :], strict=False)]
        self.assertGreater(min(gaps), PER / 2, starts)
        self.assertGreater(starts[-1] - starts[0], (JOBS / TO - 2) * PER - PER / 2, starts)
