"""The operations pages' examples run as written (issue 11: each feature
with a copy-paste example): time limits and cancelling, worker recycling,
metrics URLs and scrape settings, logging and signals, job metadata.

Their ``<!-- runnable -->`` blocks run as one module per page
(tests/doc_snippets.py); a ``ROBUST_QUEUE`` they assign must pass the
system checks; the receivers they connect are then fired for real.
"""

from __future__ import annotations

import os
from unittest import mock

from django.urls import resolve
from django.utils import timezone

from robust_queue import signals
from robust_queue.metrics import views
from robust_queue.models import FailedExecution, Job, Process
from robust_queue.options import time_limits
from testproject import tasks
from tests.doc_snippets import SnippetTestCase
from tests.helpers import work_off

CANCELLED = "robust_queue.exceptions.JobCancelledError"


def last_errors() -> list[str]:
    return [f.job.errors[-1]["exception_class_path"] for f in FailedExecution.objects.all()]


class OperationsSnippetTests(SnippetTestCase):
    def test_time_limits_and_cancelling(self) -> None:
        page = self.run_page("docs/reference/time-limits-and-cancel.md")
        self.assertEqual(time_limits.limit_for(page.render_report), 30)
        self.assertEqual(time_limits.limit_for(page.import_feed), 300)
        self.assertEqual(page.outcome.value, "cancelled")
        work_off()
        # Both render_report jobs were cancelled while waiting; the export ran.
        self.assertEqual(last_errors(), [CANCELLED, CANCELLED])
        export = Job.objects.get(task_path=page.export_rows.module_path)
        self.assertEqual(export.return_value, 250)

    def test_worker_recycling_logging_and_signals(self) -> None:
        page = self.run_page("docs/operations/logging.md")
        self.assertEqual(page.ROBUST_QUEUE["workers"][0]["max_memory"], 512)
        process = Process(name="worker-web-1", hostname="web-1")
        with self.assertLogs("myapp.alerts", "ERROR") as logs:
            signals.process_pruned.send(sender=Process, process=process, failed_jobs=2)
        self.assertEqual(
            logs.records[0].getMessage(), "worker-web-1 on web-1 died; 2 job(s) failed"
        )

    def test_signal_receivers(self) -> None:
        self.run_page("docs/reference/signals-exceptions.md")
        with self.assertLogs("myapp.failures", "ERROR") as logs:
            tasks.fail.enqueue("no")
            work_off()
        self.assertEqual(
            logs.records[0].getMessage(), "testproject.tasks.fail failed: builtins.ValueError"
        )
        job = Job(task_path="shop.tasks.charge")
        error = {"exception_class_path": "shop.errors.Declined", "traceback": ""}
        with self.assertLogs("myapp.retries", "WARNING") as logs:
            signals.job_retried.send(sender=Job, job=job, retry_at=timezone.now(), error=error)
        self.assertIn("shop.tasks.charge failed with shop.errors.Declined", logs.output[0])

    def test_metrics_urls_and_scrape_settings(self) -> None:
        token = {"ROBUST_QUEUE_METRICS_TOKEN": "a-token-of-twenty-chars"}
        with mock.patch.dict(os.environ, token):
            page = self.run_page("docs/operations/metrics.md")
        self.assertEqual(page.ROBUST_QUEUE["metrics_token"], token["ROBUST_QUEUE_METRICS_TOKEN"])
        match = resolve("/queue/metrics", urlconf=page)
        self.assertIs(match.func, views.metrics)

    def test_job_metadata(self) -> None:
        page = self.run_page("docs/reference/usage.md")
        work_off()
        jobs = Job.objects.filter(task_path=page.report.module_path).order_by("pk")
        self.assertEqual(
            [job.metadata for job in jobs],
            [
                {"trace_id": "4bf92f3577b34da6"},
                {"trace_id": "4bf92f3577b34da6", "tenant": 7},
                {"request_id": "req-42"},
            ],
        )
        self.assertEqual(
            [job.return_value for job in jobs],
            [
                {"rows": 3, "trace_id": "4bf92f3577b34da6"},
                {"rows": 4, "trace_id": "4bf92f3577b34da6"},
                {"rows": 5, "trace_id": None},
            ],
        )
