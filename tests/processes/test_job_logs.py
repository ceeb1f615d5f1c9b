"""A real worker keeps what its tasks log with each attempt (issue 29 §6):
a task's own job log, the project-wide setting, and a retried job's two
attempts, with a secret masked."""

from __future__ import annotations

from django.test import TransactionTestCase

from robust_queue.models import FailedExecution, Job, attempt_logs
from testproject import job_log_tasks
from tests.helpers import wait_until

from .support import Supervisor

SECRET = "hunter2-5d0e77"
TASK_MODULES = ["testproject.job_log_tasks"]


def logs_of(result_id: str) -> list[dict[str, object]]:
    job = Job.objects.filter(result_id=result_id, finished_at__isnull=False).first()
    return attempt_logs.stored_logs(job.attempt_logs) if job is not None else []


class JobLogTests(TransactionTestCase):
    def test_the_worker_keeps_each_attempt_s_log_with_the_job(self) -> None:
        chatty = job_log_tasks.chatty.enqueue(SECRET)
        quiet = job_log_tasks.quiet.enqueue()
        retried = job_log_tasks.fails_once_then_succeeds.enqueue("in-a-worker")
        Supervisor(self, task_modules=TASK_MODULES, job_log="WARNING")
        [entry] = wait_until(lambda: logs_of(chatty.id), timeout=30)  # type: ignore[misc]
        self.assertEqual(entry["attempt"], 1)
        self.assertTrue(str(entry["worker_id"]).startswith("worker-"))
        text = str(entry["text"])
        # The task's own @job_log() keeps INFO; the setting does not narrow it.
        self.assertIn("INFO testproject.job_log_tasks: starting with 3 items", text)
        self.assertIn("calling the API with token=", text)
        self.assertNotIn(SECRET, text)
        [entry] = wait_until(lambda: logs_of(quiet.id), timeout=30)  # type: ignore[misc]
        self.assertIn("WARNING testproject.job_log_tasks: nobody keeps this", str(entry["text"]))
        first, second = wait_until(lambda: logs_of(retried.id), timeout=30)  # type: ignore[misc]
        self.assertIn("first try for in-a-worker", str(first["text"]))
        self.assertIn("KeyError: 'in-a-worker'", str(first["text"]))
        self.assertIn("second try for in-a-worker", str(second["text"]))
        self.assertNotIn("first try", str(second["text"]))

    def test_a_job_stopped_at_its_time_limit_keeps_what_it_logged(self) -> None:
        result = job_log_tasks.overruns.enqueue()
        Supervisor(self, task_modules=TASK_MODULES)
        failed = FailedExecution.objects.filter(job__result_id=result.id)
        wait_until(failed.exists, timeout=30)
        job = Job.objects.get(result_id=result.id)
        self.assertIn("TaskTimeoutError", job.errors[-1]["exception_class_path"])
        [entry] = attempt_logs.stored_logs(job.attempt_logs)
        self.assertIn("WARNING testproject.job_log_tasks: before the limit", str(entry["text"]))
