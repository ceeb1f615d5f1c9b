"""A forked child shares the supervisor's memory: its collector leaves the
objects it inherited alone, so a full collection copies no page of them
(BENCHMARKS.md, "Memory of the supervisor tree")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.test import TransactionTestCase

from robust_queue.models import Job
from testproject import memory_tasks
from tests.helpers import wait_until

from .support import Supervisor

# Without the freeze a worker's full collection copied about 20 MiB.
MOST_COPIED_KIB = 4 * 1024


def finished(result_ids: list[str]) -> bool:
    done = Job.objects.filter(result_id__in=result_ids, finished_at__isnull=False)
    return done.count() == len(result_ids)


def returned(task: Any) -> Any:
    """What ``task`` returns, enqueued now and run by the running worker."""
    result = task.enqueue()
    wait_until(lambda: finished([result.id]), timeout=30)
    return task.get_result(result.id).return_value


class ForkMemoryTests(TransactionTestCase):
    def setUp(self) -> None:
        if not sys.platform.startswith("linux") or not Path("/proc/self/smaps_rollup").exists():
            self.skipTest("measures memory with /proc/self/smaps_rollup (Linux)")

    def returned_by_a_worker(self, task: Any) -> Any:
        """What ``task`` returns, run by a worker of a real supervisor."""
        Supervisor(self, task_modules=["testproject.memory_tasks"])
        return returned(task)

    def test_a_workers_full_collection_leaves_the_inherited_objects_shared(self) -> None:
        state = self.returned_by_a_worker(memory_tasks.collector_state)
        self.assertTrue(state["enabled"])
        # Everything alive at the fork: Django and the project, imported.
        self.assertGreater(state["frozen"], 10_000)
        self.assertLess(state["copied_kib"], MOST_COPIED_KIB)

    def test_the_workers_do_not_hold_what_only_the_start_up_checks_need(self) -> None:
        # The supervisor ran Django's system checks and the migration check
        # before forking (the helper does not skip them), in a throwaway
        # child: what they import is not in the memory the worker shares.
        loaded = self.returned_by_a_worker(memory_tasks.start_up_modules)
        self.assertEqual(
            loaded,
            {
                "urlconf": False,
                "migration_executor": False,
                "migrations": False,
                "test_client": False,
                "subcommands": False,
            },
        )


class QueryLogTests(TransactionTestCase):
    def test_under_debug_a_worker_keeps_only_each_rounds_queries(self) -> None:
        # Django keeps every query's text under DEBUG and empties the log
        # per request; a worker's threads empty theirs per job, batch and
        # round, so 500 queries of earlier jobs are not kept.
        Supervisor(self, task_modules=["testproject.memory_tasks"], env={"ROBUST_QUEUE_DEBUG": "1"})
        ids = [memory_tasks.run_queries.enqueue(5).id for _ in range(100)]
        wait_until(lambda: finished(ids), timeout=60)
        held = returned(memory_tasks.queries_held)
        self.assertEqual(held["own"], 0)
        # Each thread's last round at most (a job's 5 queries and its
        # finish, a batch, a heartbeat, a poll), far from the 500 run.
        self.assertLess(held["process"], 100)
        self.assertGreater(held["process"], 0)  # the log is on: DEBUG is
