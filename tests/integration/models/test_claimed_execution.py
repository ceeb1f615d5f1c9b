"""Finalizing exactly once, releasing, and crash failures of claims."""

from __future__ import annotations

from django.test import TestCase, override_settings

from robust_queue.compat import TaskResultStatus
from robust_queue.exceptions import ProcessExitError
from robust_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
)
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim, make_process, work_off


class FinalizeTests(TestCase):
    def test_finish_happens_once(self) -> None:
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim()
        self.assertIs(claimed.finish(3), True)
        self.assertIs(claimed.finish(4), False)
        self.assertIs(claimed.fail({"exception_class_path": "x", "traceback": ""}), False)
        fetched = tasks.add.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.return_value, 3)
        self.assertEqual(fetched.errors, [])

    def test_late_finalize_of_a_pruned_claim_does_nothing(self) -> None:
        """A stale worker whose claim was failed meanwhile cannot finish it."""
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim()
        ClaimedExecution.objects.filter(pk=claimed.pk).fail_all_with(
            ProcessExitError, "worker 123 exited"
        )
        self.assertIs(perform(claimed), False)
        fetched = tasks.add.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(
            [e.exception_class_path for e in fetched.errors],
            ["robust_queue.exceptions.ProcessExitError"],
        )
        self.assertIn("worker 123 exited", fetched.errors[0].traceback)

    def test_release_puts_the_job_back_to_ready(self) -> None:
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim()
        self.assertIs(claimed.release(), True)
        self.assertIs(claimed.release(), False)
        self.assertEqual(ReadyExecution.objects.get().job.result_id, result.id)
        work_off()
        fetched = tasks.add.get_result(result.id)
        self.assertEqual(fetched.return_value, 3)
        self.assertEqual(fetched.attempts, 2)

    def test_fail_with_retry_in_schedules_the_same_job_by_the_database_clock(
        self,
    ) -> None:
        from datetime import timedelta

        from robust_queue.models.clock import database_now

        result = tasks.add.enqueue(1, 2)
        [claimed] = claim()
        error = {"exception_class_path": "builtins.ValueError", "traceback": "tb"}
        before = database_now("default")
        self.assertIs(claimed.fail(error, retry_in=timedelta(minutes=1)), True)
        after = database_now("default")
        job = Job.objects.with_executions().get(result_id=result.id)
        scheduled_at = job.scheduled_execution.scheduled_at
        self.assertGreaterEqual(scheduled_at, before + timedelta(minutes=1))
        self.assertLessEqual(scheduled_at, after + timedelta(minutes=1))
        self.assertEqual(job.run_after, scheduled_at)
        # The error, stamped with the attempt it ended (attempt_history).
        [stored] = job.errors
        self.assertEqual({key: stored[key] for key in error}, error)
        self.assertEqual((stored["attempt"], stored["worker_id"]), (1, "test-worker"))
        self.assertEqual(tasks.add.get_result(result.id).status, TaskResultStatus.READY)

    def test_orphaned_claims_are_those_without_a_process_row(self) -> None:
        live = make_process("live")
        dead = make_process("dead")
        tasks.add.enqueue(1, 1)
        tasks.add.enqueue(2, 2)
        claim(1, process=live)
        claim(1, process=dead)
        dead_pk = dead.pk
        dead.delete()
        orphaned = ClaimedExecution.objects.orphaned()
        self.assertEqual([row.process_id for row in orphaned], [dead_pk])

    def test_failed_job_retry_runs_it_again(self) -> None:
        result = tasks.fail.enqueue("x")
        work_off()
        failed = FailedExecution.objects.get()
        self.assertIs(failed.retry(), True)
        self.assertIs(failed.retry(), False)
        work_off()
        fetched = tasks.fail.get_result(result.id)
        self.assertEqual(len(fetched.errors), 2)
        self.assertEqual(fetched.attempts, 2)

    @override_settings(ROBUST_QUEUE={"preserve_finished_jobs": False})
    def test_finished_jobs_are_deleted_when_not_preserved(self) -> None:
        tasks.add.enqueue(1, 2)
        failing = tasks.fail.enqueue()
        work_off()
        self.assertEqual(list(Job.objects.values_list("result_id", flat=True)), [failing.id])


class PerformTests(TestCase):
    def test_arguments_of_every_supported_type_reach_the_task(self) -> None:
        import datetime as dt
        import uuid
        from decimal import Decimal

        values = {
            "when": dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            "day": dt.date(2030, 1, 2),
            "span": dt.timedelta(seconds=90),
            "amount": Decimal("1.10"),
            "uid": uuid.UUID(int=7),
        }
        result = tasks.echo.enqueue((1, 2), **values)
        work_off()
        value = tasks.echo.get_result(result.id).return_value
        self.assertEqual(value["args"], ["[1, 2]"])
        self.assertEqual(value["kwargs"], {k: repr(v) for k, v in values.items()})

    def test_async_task_runs(self) -> None:
        result = tasks.async_add.enqueue(20, 22)
        work_off()
        self.assertEqual(tasks.async_add.get_result(result.id).return_value, 42)

    def test_claim_respects_limit_and_queue(self) -> None:
        for _ in range(3):
            tasks.add.enqueue(1, 1)
        tasks.report.enqueue(1)
        self.assertEqual(len(claim(2, queue_name="default")), 2)
        [report] = claim(5, queue_name="reports")
        self.assertEqual(report.job.task_path, "testproject.tasks.report")
        self.assertEqual(len(claim(5)), 1)
        self.assertEqual(claim(0), [])
