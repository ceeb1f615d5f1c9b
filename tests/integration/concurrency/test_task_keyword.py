"""Concurrency limits declared as a @task keyword (Django passes extra
@task keyword arguments to the backend's task class)."""

from __future__ import annotations

from unittest import skipUnless

from django.test import TestCase

from robust_queue.compat import TASK_TAKES_OPTIONS, task
from robust_queue.exceptions import ConfigurationError
from robust_queue.models import BlockedExecution, ReadyExecution
from robust_queue.options import concurrency
from robust_queue.options.task import RobustQueueTask
from robust_queue.running.performing import perform
from testproject import control_tasks as ct
from tests.helpers import claim


@skipUnless(TASK_TAKES_OPTIONS, "Django 6.0's @task takes no extra keywords")
class TaskKeywordTests(TestCase):
    def test_the_backend_builds_robust_queue_tasks(self) -> None:
        self.assertIsInstance(ct.limited_by_keyword, RobustQueueTask)
        limit = concurrency.limit_for(ct.limited_by_keyword)
        self.assertEqual((limit.to, limit.on_conflict), (2, "block"))

    def test_the_keyword_limit_blocks_and_releases_like_the_decorator(self) -> None:
        for i in range(3):
            ct.limited_by_keyword.enqueue("acme", f"k{i}")
        self.assertEqual(ReadyExecution.objects.count(), 2)
        blocked = BlockedExecution.objects.get()
        self.assertEqual(
            blocked.concurrency_key, "testproject.control_tasks.limited_by_keyword/acme"
        )
        first, _ = claim()
        self.assertIs(perform(first), True)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertEqual(ReadyExecution.objects.count(), 1)

    def test_using_keeps_the_limit(self) -> None:
        derived = ct.limited_by_keyword.using(priority=5)
        self.assertIs(concurrency.limit_for(derived), concurrency.limit_for(ct.limited_by_keyword))

    def test_bad_keyword_options_are_clear_errors_at_decoration(self) -> None:
        def doomed(x: int) -> int:
            return x

        doomed.__qualname__ = doomed.__name__ = "doomed"
        cases = {
            "a dict of limits_concurrency() options": "not a dict",
            "'to' must be an integer >= 1, not 0": {"key": "k", "to": 0},
            "unexpected keyword argument 'colour'": {"key": "k", "colour": 1},
        }
        for message, options in cases.items():
            with (
                self.subTest(message=message),
                self.assertRaisesMessage(ConfigurationError, message),
            ):
                task(limits_concurrency=options)(doomed)
