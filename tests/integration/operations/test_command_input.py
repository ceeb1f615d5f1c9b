"""Bad input to the operations commands: a clear error before anything is
read or written, and damaged rows that never crash a report."""

from __future__ import annotations

from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TestCase

from robust_queue.models import FailedExecution, Pause
from testproject import tasks
from tests.helpers import work_off

COMMANDS_WITH_DATABASE = [
    ("robust_queue_status",),
    ("robust_queue_metrics",),
    ("robust_queue_pause", "mail"),
    ("robust_queue_resume", "mail"),
    ("robust_queue_retry_failed",),
    ("robust_queue_clear",),
]


class CommandInputTests(TestCase):
    def test_an_unknown_database_alias_is_named_with_the_known_ones(self) -> None:
        for command in COMMANDS_WITH_DATABASE:
            with self.subTest(command=command[0]):
                with self.assertRaisesMessage(
                    CommandError, "Unknown database 'nope': DATABASES has default"
                ):
                    call_command(*command, "--database", "nope", stdout=StringIO())
        self.assertFalse(Pause.objects.exists())

    def test_pause_checks_every_name_before_pausing_any(self) -> None:
        with self.assertRaisesMessage(CommandError, "'bad queue' is invalid") as caught:
            call_command("robust_queue_pause", "mail", "bad queue", stdout=StringIO())
        self.assertIn("Nothing was paused.", str(caught.exception))
        self.assertFalse(Pause.objects.exists())

    def test_resume_still_removes_a_pause_with_a_name_written_by_hand(self) -> None:
        Pause.objects.create(queue_name="bad queue")
        out = StringIO()
        call_command("robust_queue_resume", "bad queue", stdout=out)
        self.assertIn("Queue 'bad queue' resumed.", out.getvalue())
        self.assertFalse(Pause.objects.exists())

    def test_status_lists_a_failure_whose_error_was_edited_into_text(self) -> None:
        result = tasks.fail.enqueue("boom")
        work_off()
        FailedExecution.objects.update(error="edited by hand")
        failed = FailedExecution.objects.get()
        self.assertEqual(failed.exception_class_path, "")
        out = StringIO()
        call_command("robust_queue_status", stdout=out)
        self.assertIn(result.id, out.getvalue())
