"""edit_job() racing claimers on real connections: the claim or the edit
wins, never a claim of a half-edited job, never an edit of a claimed one."""

from __future__ import annotations

import threading
import time
import unittest

from django.db import connection, transaction
from django.test import TransactionTestCase

import robust_queue
from robust_queue.exceptions import NotEditableError
from robust_queue.models import ClaimedExecution, Job, ReadyExecution
from testproject import tasks
from tests.helpers import claim, run_in_threads

JOBS = 120
EDITED = {"args": [-1, -1], "kwargs": {}}


@unittest.skipIf(connection.vendor == "sqlite", "SQLite runs one writer at a time")
class EditRaceTests(TransactionTestCase):
    def test_editing_while_workers_claim_is_all_or_nothing(self) -> None:
        """Each job is claimed either as enqueued (its edit refused) or as
        edited (its edit committed first): priority, arguments and tags
        together, on the job and as the claim read it."""
        results = robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(JOBS)])
        barrier = threading.Barrier(3)
        seen: dict[int, tuple[int, object]] = {}

        def claim_until_empty() -> int:
            barrier.wait()
            taken = 0
            while True:
                batch = claim(1, worker_id=threading.current_thread().name)
                # An empty claim may have skipped a row the edit holds.
                if not batch and not ReadyExecution.objects.exists():
                    return taken
                for row in batch:
                    seen[row.job_id] = (row.job.priority, row.job.arguments)
                taken += len(batch)
                time.sleep(0.005)

        def edit_all() -> dict[str, str]:
            barrier.wait()
            outcomes: dict[str, str] = {}
            # From the other end: the claimers take the oldest jobs first.
            for result in reversed(results):
                try:
                    robust_queue.edit_job(result.id, args=[-1, -1], priority=9, tags=["edited"])
                    outcomes[result.id] = "edited"
                except NotEditableError as exc:
                    self.assertIn("is running", str(exc))
                    outcomes[result.id] = "refused"
            return outcomes

        claimed_a, claimed_b, outcomes = run_in_threads(
            [claim_until_empty, claim_until_empty, edit_all]
        )
        assert isinstance(outcomes, dict)
        self.assertEqual(claimed_a + claimed_b, JOBS)  # type: ignore[operator]
        self.assertEqual(ClaimedExecution.objects.count(), JOBS)
        self.assertFalse(ReadyExecution.objects.exists())
        for job in Job.objects.all():
            edited = outcomes[job.result_id] == "edited"
            expected = (9, EDITED) if edited else (0, {"args": [job.args[0]] * 2, "kwargs": {}})
            self.assertEqual((job.priority, job.arguments), expected)
            self.assertEqual(seen[job.pk], expected)
            self.assertEqual(job.tag_names(), ["edited"] if edited else [])
        # The race happened: both won some.
        self.assertGreater(list(outcomes.values()).count("edited"), 0)
        self.assertGreater(list(outcomes.values()).count("refused"), 0)

    def test_a_claim_that_holds_the_row_wins_and_the_edit_is_refused(self) -> None:
        """A worker holds the ready row (its claim not yet committed) when
        the edit looks: the edit waits for nothing, reads the job again
        and, once the claim commits, refuses it as running."""
        result = tasks.add.enqueue(1, 1)
        held, release = threading.Event(), threading.Event()

        def claim_and_hold() -> int:
            with transaction.atomic():
                rows = claim(1, worker_id="holder")
                held.set()
                release.wait(10)
            return len(rows)

        def release_after_first_try(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            outcome = execute(sql, params, many, context)
            if "robust_queue_claimed_execution" in sql and sql.startswith("SELECT"):
                release.set()  # the edit found no row to lock and read the job
            return outcome

        def edit_it() -> str:
            held.wait(10)
            with connection.execute_wrapper(release_after_first_try):
                try:
                    robust_queue.edit_job(result.id, priority=5)
                except NotEditableError as exc:
                    return str(exc)
            return "edited"

        taken, outcome = run_in_threads([claim_and_hold, edit_it])
        self.assertEqual(taken, 1)
        self.assertIn(f"Job {result.id} is running", str(outcome))
        self.assertEqual(Job.objects.get(result_id=result.id).priority, 0)

    def test_an_edit_that_holds_the_row_makes_the_claim_skip_the_job(self) -> None:
        """The edit holds the ready row (not yet committed): a claim skips
        the job, and the next claim, after the commit, gets it edited."""
        result = tasks.add.enqueue(1, 1)
        job_table = Job._meta.db_table
        holding, go_on = threading.Event(), threading.Event()

        def hold_after_update(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            outcome = execute(sql, params, many, context)
            if sql.startswith("UPDATE") and job_table in sql and not holding.is_set():
                holding.set()
                go_on.wait(10)
            return outcome

        def edit_it() -> None:
            with connection.execute_wrapper(hold_after_update):
                robust_queue.edit_job(result.id, args=[20, 22], priority=3)

        def claim_around_it() -> tuple[int, list[tuple[int, object]]]:
            holding.wait(10)
            skipped = len(claim(1, worker_id="early"))
            go_on.set()
            while not (rows := claim(1, worker_id="late")):
                time.sleep(0.01)
            return skipped, [(row.job.priority, row.job.arguments) for row in rows]

        _, (skipped, rows) = run_in_threads([edit_it, claim_around_it])  # type: ignore[misc]
        self.assertTrue(holding.is_set())
        self.assertEqual(skipped, 0)
        self.assertEqual(rows, [(3, {"args": [20, 22], "kwargs": {}})])
