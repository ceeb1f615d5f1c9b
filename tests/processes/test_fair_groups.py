"""A small group's job is picked up promptly behind a big group's backlog,
by the real supervisor's worker."""

from __future__ import annotations

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Job
from testproject import fair_tasks as ft
from tests.helpers import wait_until
from tests.processes.support import Supervisor

BACKLOG = 60


class FairGroupProcessTests(TransactionTestCase):
    def test_a_small_groups_job_runs_before_the_big_groups_backlog(self) -> None:
        """With FIFO it would start after all of the big group's jobs; in
        rounds it starts right after the ones running or next."""
        robust_queue.enqueue_all([(ft.tenant_sleep, ("big", 0.1), {}) for _ in range(BACKLOG)])
        Supervisor(
            self,
            workers=[{"queues": ["tenants"], "threads": 2, "polling_interval": 0.05}],
            task_modules=["testproject.fair_tasks"],
        )
        big = Job.objects.filter(group_key="big")
        wait_until(lambda: big.filter(started_at__isnull=False).count() >= 4, timeout=60)
        small = ft.tenant_sleep.enqueue("small", 0.0)
        job = Job.objects.filter(result_id=small.id)
        wait_until(lambda: job.filter(finished_at__isnull=False).exists(), timeout=60)
        started = job.get().started_at
        waiting_behind = (
            big.filter(started_at__isnull=True).count() + big.filter(started_at__gt=started).count()
        )
        # Started with at most a few big jobs' time of its own: all but the
        # first handful of the backlog were still waiting.
        self.assertGreater(waiting_behind, BACKLOG // 2, f"{waiting_behind} big jobs after it")
        wait_until(lambda: not big.filter(finished_at__isnull=True).exists(), timeout=90)
