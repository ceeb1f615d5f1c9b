"""A backend whose OPTIONS['database'] names another alias uses only it."""

from __future__ import annotations

from django.test import TestCase

from robust_queue.compat import TaskResultStatus
from robust_queue.models import Job
from testproject import tasks
from tests.helpers import work_off


class SeparateDatabaseTests(TestCase):
    databases = {"default", "queue"}

    def test_enqueue_run_and_get_result_use_the_queue_database(self) -> None:
        separate = tasks.add.using(backend="separate")
        result = separate.enqueue(20, 1)
        self.assertEqual(Job.objects.using("default").count(), 0)
        self.assertEqual(Job.objects.using("queue").count(), 1)
        self.assertEqual(work_off(using="default"), 0)
        self.assertEqual(work_off(using="queue"), 1)
        fetched = separate.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.return_value, 21)
        self.assertEqual(fetched.backend, "separate")
