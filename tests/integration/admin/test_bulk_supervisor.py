"""A large bulk action runs on the queue: the real supervisor's worker
performs the operation job the admin enqueued, next, on a queue it serves."""

from __future__ import annotations

from unittest import mock

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import TransactionTestCase

from robust_queue.admin.jobs import bulk
from robust_queue.models import FailedExecution, Job, ReadyExecution
from testproject import tasks
from tests.helpers import wait_until, work_off
from tests.integration.admin.base import changelist
from tests.processes.support import Supervisor

OPERATION = "robust_queue.admin.bulk_task.bulk_operation"
SLEEP = "testproject.tasks.sleep_for"


class BulkOperationOnTheQueueTests(TransactionTestCase):
    def test_a_worker_performs_the_operation_and_records_it(self) -> None:
        for i in range(4):
            tasks.fail.enqueue(f"n{i}")
        work_off()
        root = User.objects.create_superuser("root", password="pw")
        self.client.force_login(root)
        first = FailedExecution.objects.order_by("pk").first()
        assert first is not None
        url = changelist(state="failed")
        data = {
            "action": "discard_selected",
            "_selected_action": [first.job_id],
            "index": 0,
            "select_across": 1,
        }
        with mock.patch.object(bulk, "BACKGROUND_ABOVE", 2):
            page = self.client.post(url, data)
            self.client.post(
                url,
                {
                    **data,
                    "confirm": "yes",
                    "max_pk": page.context["max_pk"],
                    "count": page.context["count"],
                },
            )
        self.assertEqual(FailedExecution.objects.count(), 4)
        Supervisor(self)
        wait_until(
            lambda: Job.objects.filter(task_path=OPERATION, finished_at__isnull=False).exists(),
            timeout=60,
        )
        operation = Job.objects.get(task_path=OPERATION)
        self.assertEqual(operation.return_value, {"changed": 4, "done": 4, "counted": 4})
        self.assertEqual(FailedExecution.objects.count(), 0)
        self.assertIn(
            "Discarded 4 of 4 job(s) on the queue.",
            list(LogEntry.objects.values_list("change_message", flat=True)),
        )

    def test_it_runs_next_on_the_queue_the_live_worker_serves(self) -> None:
        """The only worker serves ``other``, where 200 jobs of 0.2 s wait
        (20 s for its two threads): the operation goes there at the top
        priority, and is done while they still wait."""
        for i in range(4):
            tasks.fail.enqueue(f"n{i}")
        work_off()
        for _ in range(200):
            tasks.sleep_for.using(queue_name="other").enqueue(0.2)
        worker = {"queues": ["other"], "threads": 2, "polling_interval": 0.05}
        Supervisor(self, workers=[worker]).children("worker")
        self.client.force_login(User.objects.create_superuser("root", password="pw"))
        url = changelist(state="failed")
        data = {
            "action": "discard_selected",
            "_selected_action": [FailedExecution.objects.values_list("job_id", flat=True)[0]],
            "index": 0,
            "select_across": 1,
        }
        with mock.patch.object(bulk, "BACKGROUND_ABOVE", 2):
            page = self.client.post(url, data)
            self.assertContains(page, "It runs next on queue &#x27;other&#x27;: 0 job(s) ahead")
            self.client.post(url, {**data, "confirm": "yes", "max_pk": page.context["max_pk"]})
        operation = Job.objects.get(task_path=OPERATION)
        self.assertEqual((operation.queue_name, operation.priority), ("other", 100))
        wait_until(
            lambda: Job.objects.filter(pk=operation.pk, finished_at__isnull=False).exists(),
            timeout=60,
        )
        self.assertTrue(ReadyExecution.objects.filter(job__task_path=SLEEP).exists())
        self.assertEqual(FailedExecution.objects.count(), 0)
