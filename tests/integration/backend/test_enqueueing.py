"""``robust_queue.enqueue_all`` / ``enqueue_once`` (enqueueing.py) find each
task's backend and refuse a task of a backend that is not Robust Queue,
writing nothing."""

from __future__ import annotations

from django.test import TestCase, override_settings

import robust_queue
from robust_queue.compat import FRAMEWORK, InvalidTask, TaskResultStatus, task
from robust_queue.exceptions import EnqueueError
from robust_queue.models import Job
from testproject import other_backend, tasks

WITH_DUMMY = {
    "default": {"BACKEND": "robust_queue.backend.RobustQueueBackend"},
    "separate": {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "OPTIONS": {"database": "queue"},
    },
    "dummy": {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"},
}


class EnqueueAllTests(TestCase):
    databases = {"default", "queue"}

    def test_results_come_back_in_call_order_across_backends(self) -> None:
        separate = tasks.add.using(backend="separate")
        results = robust_queue.enqueue_all(
            [
                (tasks.add, (1, 1), {}),
                (separate, (2, 2), {}),
                (tasks.add, (3, 3), {}),
            ]
        )
        self.assertEqual([r.args for r in results], [[1, 1], [2, 2], [3, 3]])
        self.assertEqual([r.backend for r in results], ["default", "separate", "default"])
        self.assertTrue(all(r.status == TaskResultStatus.READY for r in results))
        self.assertEqual(Job.objects.using("default").count(), 2)
        self.assertEqual(Job.objects.using("queue").count(), 1)

    def test_no_calls_no_results(self) -> None:
        self.assertEqual(robust_queue.enqueue_all([]), [])


@override_settings(TASKS=WITH_DUMMY)
class OtherBackendTests(TestCase):
    def setUp(self) -> None:
        self.shout = task(backend="dummy")(other_backend.shout)

    def test_enqueue_all_refuses_a_task_of_another_backend(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "Backend 'dummy' is not a RobustQueueBackend."):
            robust_queue.enqueue_all([(self.shout, ("hi",), {})])
        self.assertFalse(Job.objects.exists())

    def test_enqueue_once_refuses_a_task_of_another_backend(self) -> None:
        with self.assertRaisesMessage(
            EnqueueError,
            "enqueue_once() needs a task of a Robust Queue backend; "
            "testproject.other_backend.shout uses backend 'dummy'.",
        ):
            robust_queue.enqueue_once(self.shout, "key-1", "hi")
        self.assertFalse(Job.objects.exists())
