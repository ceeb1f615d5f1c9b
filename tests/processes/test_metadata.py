"""Job metadata reaches a task run by a real worker process."""

from __future__ import annotations

from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import Job
from testproject import tasks
from tests.helpers import wait_until
from tests.processes.support import Supervisor


def finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


class MetadataProcessTests(TransactionTestCase):
    def test_a_forked_worker_gives_the_task_its_metadata(self) -> None:
        with robust_queue.job_metadata({"traceparent": "00-4bf92f35-00f067aa-01"}):
            traced = tasks.with_metadata.enqueue()
        plain = tasks.with_metadata.enqueue()
        Supervisor(self)
        wait_until(lambda: finished(traced.id) and finished(plain.id), timeout=30)
        self.assertEqual(
            tasks.with_metadata.get_result(traced.id).return_value,
            {"traceparent": "00-4bf92f35-00f067aa-01"},
        )
        self.assertEqual(tasks.with_metadata.get_result(plain.id).return_value, {})
