"""What a task, a worker and a pause may name: queue names and priorities."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.compat import InvalidTask
from robust_queue.exceptions import InvalidQueueNameError
from robust_queue.models import Queue
from robust_queue.processes.config import WorkerConfig
from testproject import tasks

OUT_OF_RANGE = "priority must be a whole number between -100 and 100."
BAD_NAMES = ("", "a/b", "défault", "default ", " default", "a b", "x" * 65, "q*", "%2F")
GOOD_NAMES = ("default", "mail_bulk", "reports.daily:v2", "A-1", "x" * 64)


class QueueNameTests(SimpleTestCase):
    def test_a_task_on_a_name_outside_the_alphabet_is_invalid(self) -> None:
        """Letters, digits and ``_ - . :``, 1 to 64 characters."""
        for name in BAD_NAMES:
            with self.subTest(name=name), self.assertRaisesMessage(InvalidTask, "is invalid"):
                tasks.add.using(queue_name=name)

    def test_names_in_the_alphabet_are_valid(self) -> None:
        for name in GOOD_NAMES:
            with self.subTest(name=name):
                self.assertEqual(tasks.add.using(queue_name=name).queue_name, name)

    def test_worker_selectors_follow_the_same_rule(self) -> None:
        for selector in ("a/b", "défault", "mail bulk*", "x" * 65):
            with self.subTest(selector=selector):
                errors = WorkerConfig(queues=(selector,)).validate()
                self.assertTrue(any("a queue name is 1 to 64" in e for e in errors), errors)
        valid = WorkerConfig(queues=("*", "mail*", "reports.daily:v2", "A-1")).validate()
        self.assertEqual(valid, [])

    def test_a_pause_of_an_invalid_name_is_refused(self) -> None:
        for name in ("", "a/b", "DÉFAULT"):
            with self.subTest(name=name), self.assertRaises(InvalidQueueNameError):
                Queue(name).pause()


class PriorityTests(SimpleTestCase):
    def test_a_priority_that_is_not_a_number_is_invalid_like_one_out_of_range(self) -> None:
        """``True`` is not stored as 1 and ``"5"`` raises no ``TypeError``."""
        for priority in (True, False, "5", 5.5, float("nan"), float("inf"), 101, -101):
            with self.subTest(priority=priority):
                with self.assertRaisesMessage(InvalidTask, OUT_OF_RANGE):
                    tasks.add.using(priority=priority)

    def test_whole_numbers_in_range_are_valid(self) -> None:
        for priority in (-100, 0, 100, 5.0):
            with self.subTest(priority=priority):
                self.assertEqual(tasks.add.using(priority=priority).priority, priority)
