"""`robust_queue status`, `pause`, `resume` and `retry-failed`."""

from __future__ import annotations

import contextlib
from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TransactionTestCase

from robust_queue.management.commands.robust_queue import Command as RobustQueueCommand
from robust_queue.models import FailedExecution, Job, Pause, ReadyExecution
from robust_queue.running.performing import perform
from testproject import control_tasks, tasks
from tests.helpers import claim, make_process, work_off


def run(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


class StatusTests(TransactionTestCase):
    def test_status_shows_queues_processes_and_failures(self) -> None:
        failed = tasks.fail.enqueue("kaput")
        work_off()
        tasks.report.enqueue(1)
        Pause.objects.create(queue_name="reports")
        make_process("worker-on-test")
        output = run("robust_queue_status")
        self.assertIn("Queues", output)
        self.assertRegex(output, r"reports\s+1\s+\d+s\s+yes\s+1 \(0/0 threads busy\)\s+0\s+Paused")
        self.assertIn("Processes", output)
        self.assertRegex(output, r"worker\s+worker-on-test\s+1\s+test\s+\d+s ago")
        self.assertIn("Recent failures (1 failed job(s) in all)", output)
        self.assertRegex(
            output, rf"testproject.tasks.fail\s+default\s+builtins.ValueError\s+{failed.id}"
        )

    def test_an_empty_queue_database_says_none(self) -> None:
        self.assertEqual(run("robust_queue_status").count("(none)"), 3)


class PauseResumeTests(TransactionTestCase):
    def test_pause_and_resume(self) -> None:
        self.assertEqual(
            run("robust_queue_pause", "mail", "sms"), "Queue 'mail' paused.\nQueue 'sms' paused.\n"
        )
        self.assertEqual(
            sorted(Pause.objects.values_list("queue_name", flat=True)), ["mail", "sms"]
        )
        self.assertEqual(run("robust_queue_pause", "mail"), "Queue 'mail' was already paused.\n")
        self.assertEqual(run("robust_queue_resume", "mail"), "Queue 'mail' resumed.\n")
        self.assertEqual(run("robust_queue_resume", "mail"), "Queue 'mail' was already resumed.\n")
        self.assertEqual(list(Pause.objects.values_list("queue_name", flat=True)), ["sms"])

    def test_a_bad_queue_name_is_a_clear_error(self) -> None:
        with self.assertRaisesMessage(CommandError, "'bad queue'"):
            run("robust_queue_pause", "bad queue")
        self.assertFalse(Pause.objects.exists())


class RetryFailedTests(TransactionTestCase):
    def setUp(self) -> None:
        tasks.fail.enqueue("one")  # ValueError, default
        control_tasks.picky.enqueue("key")  # KeyError (discarded)
        tasks.fail.using(queue_name="reports").enqueue("two")
        process = make_process()
        for claimed in claim(process=process):
            perform(claimed)
        self.assertEqual(FailedExecution.objects.count(), 3)

    def failed_paths(self) -> list[str]:
        return sorted(FailedExecution.objects.values_list("job__task_path", flat=True))

    def test_retry_by_exception_class_name_or_path(self) -> None:
        self.assertEqual(
            run("robust_queue_retry_failed", "--exception", "KeyError"),
            "Retried 1 failed job(s).\n",
        )
        self.assertEqual(self.failed_paths(), ["testproject.tasks.fail"] * 2)
        self.assertEqual(
            run("robust_queue_retry_failed", "--exception", "builtins.ValueError", "--dry-run"),
            "Would retry 2 failed job(s).\n",
        )
        self.assertEqual(FailedExecution.objects.count(), 2)

    def test_retry_by_task_and_queue(self) -> None:
        run("robust_queue_retry_failed", "--task", "testproject.tasks.fail", "--queue", "reports")
        self.assertEqual(ReadyExecution.objects.get().job.queue_name, "reports")
        self.assertEqual(FailedExecution.objects.count(), 2)
        self.assertEqual(run("robust_queue_retry_failed"), "Retried 2 failed job(s).\n")
        self.assertEqual(ReadyExecution.objects.count(), 3)
        self.assertEqual(Job.objects.count(), 3)


class SubcommandDispatchTests(TransactionTestCase):
    """``call_command("robust_queue", NAME, ...)`` runs NAME's command, as
    ``manage.py robust_queue NAME ...`` does."""

    def test_each_subcommand_runs_through_call_command(self) -> None:
        tasks.fail.enqueue("kaput")
        work_off()
        waiting = tasks.report.enqueue(1)
        self.assertRegex(run("robust_queue", "status"), r"Queues[\s\S]*reports\s+1")
        self.assertEqual(run("robust_queue", "pause", "mail"), "Queue 'mail' paused.\n")
        self.assertIs(Pause.objects.filter(queue_name="mail").exists(), True)
        self.assertEqual(run("robust_queue", "resume", "mail"), "Queue 'mail' resumed.\n")
        self.assertEqual(
            run("robust_queue", "retry-failed", "--dry-run"), "Would retry 1 failed job(s).\n"
        )
        self.assertIn(
            'robust_queue_jobs{queue="reports",state="ready"} 1', run("robust_queue", "metrics")
        )
        self.assertEqual(run("robust_queue", "cancel", waiting.id), f"{waiting.id}: cancelled\n")
        # Ids made before they were kept from starting with "-" are given
        # after "--" on the command line, which the dispatch passes on.
        legacy = tasks.report.enqueue(2)
        dashed = "-" + legacy.id[1:]
        Job.objects.filter(result_id=legacy.id).update(result_id=dashed)
        out = StringIO()
        with contextlib.redirect_stdout(out):
            RobustQueueCommand().run_from_argv(
                ["manage.py", "robust_queue", "cancel", "--", dashed]
            )
        self.assertEqual(out.getvalue(), f"{dashed}: cancelled\n")
        self.assertEqual(
            run("robust_queue", "clear", "--dry-run"),
            "Would delete 0 finished and 0 failed job(s).\n",
        )

    def test_health_runs_with_options_before_and_after_its_name(self) -> None:
        """``robust_queue -v 2 health --json``: exits as health does (0
        here: no supervisor required, no ready job unserved)."""
        for args in (("health",), ("-v", "2", "health"), ("--verbosity=0", "health", "-v", "3")):
            out = StringIO()
            with self.subTest(args=args), self.assertRaises(SystemExit) as done:
                call_command("robust_queue", *args, "--skip-supervisor", "--json", stdout=out)
            self.assertEqual(done.exception.code, 0, out.getvalue())
            self.assertIn('"healthy": true', out.getvalue())

    def test_an_unknown_subcommand_is_a_clear_error(self) -> None:
        with self.assertRaisesMessage(CommandError, "invalid choice: 'stauts'"):
            run("robust_queue", "stauts")

    def test_supervisor_options_before_a_subcommand_are_refused(self) -> None:
        with self.assertRaisesMessage(
            CommandError, "--check, --mode does not go with the subcommand 'status'."
        ):
            run("robust_queue", "--check", "--mode", "thread", "status")

    def test_a_subcommands_bad_option_is_its_own_error(self) -> None:
        with self.assertRaisesMessage(CommandError, "argument --max-latency: must be a duration"):
            run("robust_queue", "health", "--max-latency", "soon")
