"""Retention and ``robust_queue clear`` remove only what they should; the
old name ``prune`` still works, with a deprecation message."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from unittest import mock

from django.core.management import CommandError, call_command
from django.test import TestCase, override_settings
from django.utils import timezone

from robust_queue.management.commands.robust_queue import SUBCOMMANDS
from robust_queue.management.commands.robust_queue import Command as RobustQueueCommand
from robust_queue.models import FailedExecution, Job, ScheduledExecution, batching, retention
from testproject import tasks
from tests.helpers import claim, work_off


class ClearTests(TestCase):
    def setUp(self) -> None:
        old = timezone.now() - timedelta(days=3)
        self.finished_old = [tasks.add.enqueue(i, i).id for i in range(5)]
        self.report_old = tasks.report.enqueue(1).id
        self.failed_old = tasks.fail.enqueue().id
        work_off()
        Job.objects.filter(finished_at__isnull=False).update(finished_at=old)
        FailedExecution.objects.update(created_at=old)
        self.finished_new = tasks.add.enqueue(9, 9).id
        self.failed_new = tasks.fail.enqueue().id
        work_off()
        self.running = tasks.sleep_for.enqueue(1).id
        claim()
        self.ready = tasks.add.enqueue(1, 1).id
        self.scheduled = (
            tasks.add.using(run_after=timezone.now() + timedelta(days=1)).enqueue(2, 2).id
        )
        Job.objects.filter(finished_at__isnull=True).update(enqueued_at=old, started_at=old)

    def remaining(self) -> set[str]:
        return set(Job.objects.values_list("result_id", flat=True))

    def clear(self, *args: str) -> str:
        out = StringIO()
        call_command("robust_queue_clear", *args, stdout=out)
        return out.getvalue()

    def test_old_finished_jobs_are_cleared_in_batches(self) -> None:
        output = self.clear("--older-than", "1d", "--batch-size", "2")
        self.assertIn("Deleted 6 finished and 0 failed", output)
        expected = {
            self.failed_old,
            self.finished_new,
            self.failed_new,
            self.ready,
            self.scheduled,
            self.running,
        }
        self.assertEqual(self.remaining(), expected)

    def test_failed_jobs_only_when_asked(self) -> None:
        self.clear("--older-than", "1d", "--failed-older-than", "2d")
        self.assertNotIn(self.failed_old, self.remaining())
        self.assertIn(self.failed_new, self.remaining())
        self.assertEqual(FailedExecution.objects.get().job.result_id, self.failed_new)

    def test_task_filter_and_dry_run(self) -> None:
        output = self.clear("--older-than", "1d", "--task", "testproject.tasks.report", "--dry-run")
        self.assertIn("Would delete 1 finished", output)
        self.assertIn(self.report_old, self.remaining())
        self.clear("--older-than", "1d", "--task", "testproject.tasks.report")
        self.assertNotIn(self.report_old, self.remaining())
        self.assertTrue(set(self.finished_old) <= self.remaining())

    def test_unfinished_work_is_never_deleted(self) -> None:
        self.clear("--older-than", "0s", "--failed-older-than", "0s", "--batch-size", "1")
        self.assertEqual(self.remaining(), {self.ready, self.scheduled, self.running})
        self.assertEqual(ScheduledExecution.objects.count(), 1)

    def test_settings_drive_the_built_in_retention(self) -> None:
        settings = {
            "clear_finished_jobs_after": timedelta(days=2),
            "clear_failed_jobs_after": 86400,
        }
        with override_settings(ROBUST_QUEUE=settings):
            self.assertEqual(
                retention.clear_expired("default"), {"finished": 6, "failed": 1, "statistics": 0}
            )
        self.assertEqual(
            retention.clear_expired("default"), {"finished": 0, "failed": 0, "statistics": 0}
        )

    def test_a_large_clear_says_what_it_does_and_what_it_did(self) -> None:
        """(Large here means 2 rows or more.) ``-v 0`` keeps it quiet."""
        with mock.patch.object(batching, "LARGE", 2):
            quiet = self.clear("--older-than", "1d", "--dry-run", "-v", "0")
            output = self.clear("--older-than", "1d", "--batch-size", "2")
        self.assertEqual(quiet, "Would delete 6 finished and 0 failed job(s).\n")
        lines = output.splitlines()
        self.assertEqual(
            lines[0], "Clearing 6 finished job(s) older than 1 day, 0:00:00, in batches"
        )
        self.assertRegex(lines[-2], r"^Cleared 6 finished job\(s\) older than 1 day, 0:00:00 in ")
        self.assertEqual(lines[-1], "Deleted 6 finished and 0 failed job(s).")

    def test_a_large_retention_pass_logs_its_progress(self) -> None:
        with (
            mock.patch.object(batching, "LARGE", 2),
            self.assertLogs("robust_queue.models.batching", "INFO") as logs,
        ):
            retention.clear_expired("default")
        self.assertEqual(
            logs.output[0],
            "INFO:robust_queue.models.batching:Clearing 6 finished job(s) older than "
            "1 day, 0:00:00, in batches",
        )
        self.assertRegex(logs.output[-1], "Cleared 6 finished job\\(s\\) older than 1 day")

    def test_a_pass_counts_up_to_a_cap(self) -> None:
        """Counting a huge history would itself take long: past the cap,
        the log says "more than"."""
        with (
            mock.patch.object(batching, "LARGE", 2),
            mock.patch.object(retention, "COUNT_AT_MOST", 3),
        ):
            output = self.clear("--older-than", "1d", "--batch-size", "2")
        self.assertEqual(
            output.splitlines()[0],
            "Clearing more than 3 finished job(s) older than 1 day, 0:00:00, in batches",
        )
        self.assertIn("Deleted 6 finished and 0 failed job(s).", output)

    def test_bad_options_are_rejected(self) -> None:
        with self.assertRaises(CommandError):
            self.clear("--older-than", "soon")
        with self.assertRaisesMessage(CommandError, "--batch-size"):
            self.clear("--batch-size", "0")


class DeprecatedPruneTests(TestCase):
    """``prune`` is the old name of ``clear``: it still clears, and says so."""

    def setUp(self) -> None:
        tasks.add.enqueue(1, 1)
        work_off()
        Job.objects.update(finished_at=timezone.now() - timedelta(days=3))

    def run_subcommand(self, name: str, *args: str) -> tuple[str, str]:
        """``manage.py robust_queue NAME ARGS``: (stdout, stderr). Called as
        ``run_from_argv`` would, without closing the test's connection."""
        out, err = StringIO(), StringIO()
        call_command(SUBCOMMANDS[name](), *args, stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()

    def test_the_old_subcommand_clears_and_names_the_new_one_on_stderr(self) -> None:
        out, err = self.run_subcommand("prune", "--older-than", "1d")
        self.assertIn("Deleted 1 finished and 0 failed job(s).", out)
        self.assertIn("`robust_queue prune` is deprecated", err)
        self.assertIn("use `manage.py robust_queue clear`", err)
        self.assertFalse(Job.objects.exists())

    def test_the_old_command_name_clears_and_names_the_new_one_on_stderr(self) -> None:
        out, err = StringIO(), StringIO()
        call_command(
            "robust_queue_prune", "--older-than", "1d", "--dry-run", stdout=out, stderr=err
        )
        self.assertIn("Would delete 1 finished", out.getvalue())
        self.assertIn("use `manage.py robust_queue clear`", err.getvalue())
        self.assertTrue(Job.objects.exists())

    def test_the_new_subcommand_clears_without_a_warning(self) -> None:
        out, err = self.run_subcommand("clear", "--older-than", "1d")
        self.assertIn("Deleted 1 finished", out)
        self.assertEqual(err, "")
        self.assertFalse(Job.objects.exists())

    def test_the_command_s_help_lists_clear_not_prune(self) -> None:
        self.assertIn("clear", RobustQueueCommand.help)
        self.assertNotIn("prune", RobustQueueCommand.help)
