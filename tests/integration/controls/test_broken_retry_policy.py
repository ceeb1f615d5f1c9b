"""A retry policy that cannot decide when to retry (its backoff raises or
returns something that is not a delay) ends the job FAILED for good, with
its own error recorded and one log line naming the task and the problem:
on the worker's finalize path and when a process's claims are failed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import TestCase
from django.utils import timezone

from robust_queue.compat import Task
from robust_queue.models import ClaimedExecution, Job, JobState, Process, ProcessKind
from robust_queue.options import retries
from testproject import control_tasks as ct
from tests.helpers import claim, work_off

BROKEN: list[tuple[Task[..., Any], str]] = [
    (ct.backoff_raises, "raised ZeroDivisionError('no delay for attempt 1')"),
    (ct.backoff_returns_text, "returned 'soon' for attempt 1, not a timedelta"),
]


def register(name: str) -> Process:
    return Process.objects.register(kind=ProcessKind.WORKER, name=name, pid=4321, hostname="h")


class BrokenPolicyTestCase(TestCase):
    def assert_failed_for_good(self, result_id: str, exception_class_path: str) -> None:
        job = Job.objects.with_executions().get(result_id=result_id)
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(len(job.errors), 1)
        self.assertEqual(job.errors[0]["exception_class_path"], exception_class_path)
        self.assertEqual(job.failed_execution.error["exception_class_path"], exception_class_path)
        self.assertFalse(ClaimedExecution.objects.filter(job_id=job.pk).exists())

    def assert_logged_once(
        self, logs: Any, task: Task[..., Any], result_id: str, problem: str
    ) -> None:
        [record] = logs.records
        message = record.getMessage()
        self.assertIn(
            f"Job {result_id} of task {task.module_path} failed and is not retried", message
        )
        self.assertIn("its retry policy cannot say when", message)
        self.assertIn(problem, message)
        self.assertIsNotNone(record.exc_info, "logged with its traceback")


class WorkerTests(BrokenPolicyTestCase):
    def test_a_worker_run_job_whose_backoff_is_broken_ends_failed(self) -> None:
        """The body's error is the one stored; nothing is scheduled again."""
        for task, problem in BROKEN:
            with self.subTest(task=task.name):
                result = task.enqueue("body")
                with self.assertLogs(retries.logger, "ERROR") as logs:
                    self.assertEqual(work_off(), 1)
                self.assert_failed_for_good(result.id, "builtins.ValueError")
                self.assert_logged_once(logs, task, result.id, problem)
                fetched = task.get_result(result.id)
                self.assertEqual(fetched.status, "FAILED")
                self.assertIn("body fails", fetched.errors[0].traceback)


class ClaimsOfDeadProcessesTests(BrokenPolicyTestCase):
    def test_a_pruned_process_s_claim_of_such_a_task_ends_failed(self) -> None:
        """``fail_all_with`` (pruning) fails it instead of raising."""
        for task, problem in BROKEN:
            with self.subTest(task=task.name):
                process = register(f"silent-{task.name}")
                result = task.enqueue("pruned")
                claim(1, process=process)
                Process.objects.filter(pk=process.pk).update(
                    last_heartbeat_at=timezone.now() - timedelta(hours=1)
                )
                with self.assertLogs(retries.logger, "ERROR") as logs:
                    self.assertEqual(len(Process.objects.prune(60)), 1)
                self.assert_failed_for_good(result.id, "robust_queue.exceptions.ProcessPrunedError")
                self.assert_logged_once(logs, task, result.id, problem)

    def test_an_exited_process_s_claim_of_such_a_task_ends_failed(self) -> None:
        for task, problem in BROKEN:
            with self.subTest(task=task.name):
                process = register(f"exited-{task.name}")
                result = task.enqueue("exited")
                claim(1, process=process)
                with self.assertLogs(retries.logger, "ERROR") as logs:
                    self.assertEqual(process.fail_claims("was killed"), 1)
                self.assert_failed_for_good(result.id, "robust_queue.exceptions.ProcessExitError")
                self.assert_logged_once(logs, task, result.id, problem)
