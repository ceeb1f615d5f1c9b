"""The claim reads its index in order: no sort of the ready table, whatever
its size. The plans at 1,000,000 ready jobs are in BENCHMARKS.md."""

from __future__ import annotations

import json

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.models import Job, ReadyExecution


class ClaimPlanTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        # A big queue of low priority behind a smaller one of high priority,
        # their jobs interleaved: a walk of the all-queues index in claim
        # order meets every "emails" job before the first "default" one.
        now = timezone.now()
        jobs = Job.objects.bulk_create(
            Job(
                task_path="testproject.tasks.add",
                queue_name="emails" if i % 4 == 0 else "default",
                priority=10 if i % 4 == 0 else 0,
                backend_alias="default",
                enqueued_at=now,
            )
            for i in range(4000)
        )
        ReadyExecution.objects.bulk_create(
            ReadyExecution(job=job, queue_name=job.queue_name, priority=job.priority)
            for job in jobs
        )
        if connection.vendor in ("postgresql", "sqlite"):
            # MySQL/MariaDB's ANALYZE TABLE would commit the test's
            # transaction; InnoDB estimates from the index itself.
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE robust_queue_ready_execution")

    def test_a_named_queue_is_claimed_through_its_own_index(self) -> None:
        """A claim of the big low-priority queue reads (queue_name,
        priority DESC, job_id): it does not filter its way through the
        other queue's jobs in the all-queues index, nor sort."""
        plan = self._claim_plan("default")
        self.assertIn("rq_ready_poll_queue", plan)
        self.assertNotIn("rq_ready_poll_all", plan)
        self._assert_no_sort(plan)

    def test_every_queue_is_claimed_through_the_all_queues_index(self) -> None:
        plan = self._claim_plan(None)
        self.assertIn("rq_ready_poll_all", plan)
        self._assert_no_sort(plan)

    def _claim_plan(self, queue_name: str | None) -> str:
        """The plan of the statement a claim of ``queue_name`` runs to find
        its rows, as this database would run it on a big table."""
        with CaptureQueriesContext(connection) as queries:
            claimed = ReadyExecution.objects.claim(
                3, process_id=None, worker_id="w", queue_name=queue_name, paused_tasks=()
            )
        self.assertEqual(len(claimed), 3)
        [sql] = [q["sql"] for q in queries.captured_queries if "LIMIT" in q["sql"].upper()]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # As on a big table, where no scan of the whole of it wins.
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute(f"EXPLAIN {sql}")
                return "\n".join(row[0] for row in cursor.fetchall())
            if connection.vendor == "sqlite":
                cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
                return "\n".join(row[-1] for row in cursor.fetchall())
            cursor.execute(f"EXPLAIN FORMAT=JSON {sql}")
            plan = json.loads(cursor.fetchone()[0])
        [table] = _tables(plan, "robust_queue_ready_execution")
        return f"{table.get('key')}\n{json.dumps(plan)}"

    def _assert_no_sort(self, plan: str) -> None:
        if connection.vendor == "postgresql":
            self.assertNotIn("Sort", plan)
        elif connection.vendor == "sqlite":
            self.assertNotIn("TEMP B-TREE", plan)
        else:
            self.assertNotIn("filesort", plan)


def _tables(plan: object, name: str) -> list[dict[str, object]]:
    """The table entries of a MySQL/MariaDB JSON plan that read ``name``."""
    found = []
    if isinstance(plan, dict):
        if plan.get("table_name") == name:
            found.append(plan)
        for value in plan.values():
            found += _tables(value, name)
    elif isinstance(plan, list):
        for value in plan:
            found += _tables(value, name)
    return found
