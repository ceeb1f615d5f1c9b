"""Real worker and dispatcher processes run a chain in order, and fail
the dependents of a job that failed for good."""

from __future__ import annotations

import time

from django.test import TransactionTestCase

import robust_queue
from robust_queue.compat import TaskResultStatus
from robust_queue.models import Job
from testproject import tasks
from testproject.models import LedgerEntry
from tests.processes.support import Supervisor

STEPS = ["a", "b", "c", "d"]


class DependencyProcessTests(TransactionTestCase):
    def test_a_chain_runs_in_order_and_a_failure_fails_its_dependents(self) -> None:
        """Each step of the chain starts after the one before it finished
        (the ledger rows come in order, with the slower step first); the
        dependents of the failing job end FAILED, none of them ran."""
        steps = robust_queue.chain([(tasks.record, (key, 0.2), {}) for key in STEPS])
        failing = tasks.fail.enqueue("boom")
        child = robust_queue.enqueue_after([failing], tasks.record, ("never",))
        grandchild = robust_queue.enqueue_after([child], tasks.record, ("never",))
        Supervisor(self, dispatchers=[{"batch_size": 100, "polling_interval": 0.05}])
        deadline = time.monotonic() + 60
        while Job.objects.filter(finished_at__isnull=True, failed_execution__isnull=True).exists():
            self.assertLess(time.monotonic(), deadline, "the chain never ran to its end")
            time.sleep(0.1)
        self.assertEqual(
            list(LedgerEntry.objects.order_by("pk").values_list("key", flat=True)), STEPS
        )
        runs = [tasks.record.get_result(result.id) for result in steps]
        for run in runs:
            self.assertEqual(run.status, TaskResultStatus.SUCCESSFUL)
        for earlier, later in zip(runs, runs[1:], strict=False):
            self.assertGreaterEqual(later.started_at, earlier.finished_at)
        for result in (child, grandchild):
            self.assertEqual(tasks.record.get_result(result.id).status, TaskResultStatus.FAILED)
