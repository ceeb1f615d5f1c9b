"""A claim builds its job instances from a plan its connection keeps: made
once per column list, then reused, with every value converted as the ORM
would (JSON, datetimes), on every thread's own connection."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, connections
from django.test import TransactionTestCase

from robust_queue.models import Job, ReadyExecution
from robust_queue.models.rows import PLANS
from testproject import tasks
from tests.helpers import make_process, run_in_threads


def _claim_one(worker: str) -> Job:
    process = make_process(worker)
    [claimed] = ReadyExecution.objects.claim(1, process_id=process.pk, worker_id=worker)
    return claimed.job


class RowPlanTests(TransactionTestCase):
    def test_the_plan_is_made_once_and_values_are_converted(self) -> None:
        tasks.echo.enqueue({"nested": [1, "two"]}, when="x")
        tasks.echo.enqueue([3], when="y")
        connections["default"].__dict__.pop(PLANS, None)
        first = _claim_one("w1")
        plans = dict(connections["default"].__dict__[PLANS])
        second = _claim_one("w2")
        self.assertEqual(
            connections["default"].__dict__[PLANS], plans, "the same plan, not a new one"
        )
        self.assertEqual(len(plans), 1)
        for job in (first, second):
            stored = Job.objects.get(pk=job.pk)
            self.assertEqual(job.arguments, stored.arguments)
            self.assertIsInstance(job.arguments["args"], list)
            self.assertIsInstance(job.enqueued_at, datetime)
            self.assertEqual(job.enqueued_at, stored.enqueued_at)
            self.assertEqual(job.result_id, stored.result_id)

    def test_each_thread_s_connection_keeps_its_own(self) -> None:
        for i in range(2):
            tasks.add.enqueue(i, i)
        if connection.vendor == "sqlite":
            self.skipTest("SQLite's test database is one connection shared by the threads")

        def claim(worker: str) -> tuple[int, list[int]]:
            job = _claim_one(worker)
            return id(connections["default"].__dict__[PLANS]), job.arguments["args"]

        (one, args1), (two, args2) = run_in_threads([lambda: claim("a"), lambda: claim("b")])
        self.assertNotEqual(one, two)
        self.assertEqual(sorted([args1, args2]), [[0, 0], [1, 1]])
