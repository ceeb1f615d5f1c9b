"""A job whose ``worker_ids`` column was edited by hand into something
that is not a JSON list is counted as what it holds: its claims are
failed (or retried) like any other, never left claimed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import SimpleTestCase, TestCase
from django.utils import timezone

from robust_queue.models import ClaimedExecution, Job, JobState, Process, ProcessKind
from robust_queue.models.attempt_history import stored_worker_ids
from testproject import control_tasks as ct
from testproject import tasks
from tests.helpers import claim

# (stored value, runs it counts as); the column is NOT NULL, so None
# (SQL NULL) is only read, never stored.
HAND_EDITED: list[tuple[Any, int]] = [(7, 1), ("w1", 1), ({"w": 1}, 1), ([], 0)]


class StoredWorkerIdsTests(SimpleTestCase):
    def test_a_list_is_read_as_it_is_and_anything_else_as_one_run(self) -> None:
        self.assertEqual(stored_worker_ids(["a", "b"]), ["a", "b"])
        self.assertEqual(stored_worker_ids(7), [7])
        self.assertEqual(stored_worker_ids({"w": 1}), [{"w": 1}])
        self.assertEqual(stored_worker_ids(None), [])

    def test_the_retry_attempt_counts_what_is_there(self) -> None:
        for value, runs in [*HAND_EDITED, (None, 0), (["a", "b"], 2)]:
            with self.subTest(value=value):
                self.assertEqual(Job(worker_ids=value).retry_attempt, runs)
        self.assertEqual(Job(worker_ids=["a", "b", "c"], snoozes=1).retry_attempt, 2)


class PrunedClaimTests(TestCase):
    def prune_claim_of(self, task: Any, value: Any) -> str:
        process = Process.objects.register(
            kind=ProcessKind.WORKER, name=f"silent-{value!r}", pid=4321, hostname="h"
        )
        result = task.enqueue("x") if task is ct.crashes_once else task.enqueue(1, 2)
        claim(1, process=process)
        Job.objects.filter(result_id=result.id).update(worker_ids=value)
        Process.objects.filter(pk=process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        self.assertEqual(len(Process.objects.prune(60)), 1)
        self.assertFalse(ClaimedExecution.objects.filter(job__result_id=result.id).exists())
        return str(result.id)

    def test_a_claim_whose_worker_ids_is_not_a_list_is_failed_by_prune(self) -> None:
        for value, _ in HAND_EDITED:
            with self.subTest(value=value):
                result_id = self.prune_claim_of(tasks.add, value)
                job = Job.objects.with_executions().get(result_id=result_id)
                self.assertEqual(job.state, JobState.FAILED)
                self.assertEqual(
                    job.errors[-1]["exception_class_path"],
                    "robust_queue.exceptions.ProcessPrunedError",
                )

    def test_the_retry_policy_counts_a_hand_edited_value_as_one_run(self) -> None:
        """worker_ids=7 is attempt 1 of 2: the crash is retried."""
        result_id = self.prune_claim_of(ct.crashes_once, 7)
        job = Job.objects.with_executions().get(result_id=result_id)
        self.assertEqual(job.state, JobState.READY)
        self.assertEqual(job.errors[0]["attempt"], 1)
        self.assertEqual(job.errors[0]["worker_id"], "7")


class ResultOfHandEditedWorkerIdsTests(TestCase):
    def test_get_result_reads_what_the_column_holds(self) -> None:
        """get_result of a job whose worker_ids is not a list answers, with
        one worker per run it counts, as text (never a TypeError)."""
        for value, runs in HAND_EDITED:
            with self.subTest(value=value):
                result = tasks.add.enqueue(1, 2)
                Job.objects.filter(result_id=result.id).update(worker_ids=value)
                read = tasks.add.get_result(result.id)
                self.assertEqual(len(read.worker_ids), runs)
                self.assertEqual(read.attempts, runs)
                self.assertTrue(all(isinstance(w, str) for w in read.worker_ids))
