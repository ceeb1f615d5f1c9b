"""`robust_queue clear --task` names an unknown task instead of deleting nothing."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TestCase
from django.utils import timezone

from robust_queue.models import Job
from testproject import tasks
from tests.helpers import work_off


def clear(*args: str) -> str:
    out = StringIO()
    call_command("robust_queue_clear", "--older-than", "1d", *args, stdout=out)
    return out.getvalue()


class ClearTaskTests(TestCase):
    def setUp(self) -> None:
        tasks.add.enqueue(1, 1)
        work_off()
        Job.objects.update(finished_at=timezone.now() - timedelta(days=3))

    def test_an_unknown_task_path_is_an_error_with_a_suggestion(self) -> None:
        message = (
            "Unknown task 'testproject.tasks.ad': no task has this path and no job "
            "in database 'default' names it. Did you mean 'testproject.tasks.add'?"
        )
        with self.assertRaisesMessage(CommandError, message):
            clear("--task", "testproject.tasks.ad", "--dry-run")
        self.assertEqual(Job.objects.count(), 1)

    def test_a_known_task_is_cleared(self) -> None:
        self.assertIn("Deleted 1 finished", clear("--task", "testproject.tasks.add"))

    def test_jobs_of_a_task_removed_from_the_code_can_still_be_cleared(self) -> None:
        Job.objects.update(task_path="shop.tasks.retired")
        self.assertIn("Deleted 1 finished", clear("--task", "shop.tasks.retired"))
