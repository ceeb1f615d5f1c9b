"""The operations commands' edges: ``--database`` / ``--backend`` act on the
named queue database only, ``status`` bounds and ages its rows,
``retry-failed`` matches exception classes exactly, and errors reach the
command line as exit code 1 with a message naming the problem."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TransactionTestCase, override_settings
from django.utils import timezone

from robust_queue import __version__
from robust_queue.management.commands.robust_queue import Command as RobustQueueCommand
from robust_queue.models import FailedExecution, Job, Pause, Process, ReadyExecution
from testproject import tasks
from tests.helpers import make_process, work_off


def run(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


def run_with_exit(name: str, *args: str) -> tuple[str, str, int]:
    """Output, errors and exit code of a command that may ``sys.exit``."""
    out, err = StringIO(), StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return out.getvalue(), err.getvalue(), int(exc.code or 0)
    return out.getvalue(), err.getvalue(), 0


def from_command_line(*words: str) -> tuple[str, str, int]:
    """``manage.py robust_queue WORDS...``: output, errors and exit code."""
    out, err = StringIO(), StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        # Built inside the redirection: a command binds its streams then.
        command = RobustQueueCommand()
        try:
            command.run_from_argv(["manage.py", "robust_queue", *words])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return out.getvalue(), err.getvalue(), code


class SecondDatabaseTests(TransactionTestCase):
    """Each command reads and writes the database it is given, and only it
    (the "separate" backend keeps its jobs in the "queue" database)."""

    databases = {"default", "queue"}

    def test_status_reads_the_named_database(self) -> None:
        tasks.add.using(backend="separate", queue_name="elsewhere").enqueue(1, 2)
        default = run("robust_queue_status")
        self.assertNotIn("elsewhere", default)
        self.assertEqual(default.count("(none)"), 3)
        second = run("robust_queue_status", "--database", "queue")
        self.assertRegex(second, r"elsewhere\s+1\s+\d+s\s+no\s+0 \(0/0 threads busy\)")

    def test_pause_and_resume_write_the_named_database(self) -> None:
        self.assertEqual(
            run("robust_queue_pause", "--database", "queue", "mail"), "Queue 'mail' paused.\n"
        )
        self.assertEqual(
            list(Pause.objects.using("queue").values_list("queue_name", flat=True)), ["mail"]
        )
        self.assertIs(Pause.objects.using("default").exists(), False)
        # Resuming in the default database finds nothing to resume there.
        self.assertEqual(run("robust_queue_resume", "mail"), "Queue 'mail' was already resumed.\n")
        self.assertIs(Pause.objects.using("queue").filter(queue_name="mail").exists(), True)
        self.assertEqual(
            run("robust_queue_resume", "--database", "queue", "mail"), "Queue 'mail' resumed.\n"
        )
        self.assertIs(Pause.objects.using("queue").exists(), False)

    def test_retry_failed_retries_the_named_databases_jobs(self) -> None:
        tasks.fail.using(backend="separate").enqueue("far")
        tasks.fail.enqueue("near")
        work_off(using="queue")
        work_off()
        self.assertEqual(
            run("robust_queue_retry_failed", "--database", "queue"), "Retried 1 failed job(s).\n"
        )
        self.assertEqual(ReadyExecution.objects.using("queue").count(), 1)
        self.assertIs(FailedExecution.objects.using("queue").exists(), False)
        # The default database's failure is still there, untouched.
        self.assertEqual(FailedExecution.objects.using("default").count(), 1)
        self.assertIs(ReadyExecution.objects.using("default").exists(), False)

    def test_metrics_of_the_named_database(self) -> None:
        tasks.add.using(backend="separate", queue_name="elsewhere").enqueue(1, 2)
        line = 'robust_queue_jobs{queue="elsewhere",state="ready"} 1'
        self.assertIn(line, run("robust_queue_metrics", "--database", "queue"))
        self.assertNotIn('queue="elsewhere"', run("robust_queue_metrics"))

    def test_cancel_finds_a_job_only_through_its_backend(self) -> None:
        result = tasks.add.using(backend="separate").enqueue(1, 2)
        out, err, code = run_with_exit("robust_queue_cancel", "--", result.id)
        self.assertEqual((out, code), ("", 1))
        self.assertIn(f"{result.id}: error: No job has the result id {result.id!r}.", err)
        self.assertIs(ReadyExecution.objects.using("queue").exists(), True)
        out, err, code = run_with_exit(
            "robust_queue_cancel", "--backend", "separate", "--", result.id
        )
        self.assertEqual((out, err, code), (f"{result.id}: cancelled\n", "", 0))
        self.assertIs(
            FailedExecution.objects.using("queue").filter(job__result_id=result.id).exists(), True
        )

    def test_clear_deletes_from_the_named_database(self) -> None:
        tasks.add.using(backend="separate").enqueue(1, 2)
        tasks.add.enqueue(3, 4)
        work_off(using="queue")
        work_off()
        old = timezone.now() - timedelta(days=2)
        for alias in ("default", "queue"):
            Job.objects.using(alias).update(finished_at=old)
        self.assertEqual(
            run("robust_queue_clear", "--older-than", "1d", "--database", "queue"),
            "Deleted 1 finished and 0 failed job(s).\n",
        )
        self.assertIs(Job.objects.using("queue").exists(), False)
        self.assertEqual(Job.objects.using("default").count(), 1)


class StatusOutputTests(TransactionTestCase):
    def _fail(self, *messages: str) -> list[str]:
        ids = [tasks.fail.enqueue(message).id for message in messages]
        work_off()
        return ids

    def test_failures_bounds_the_rows_but_not_the_total(self) -> None:
        first, second, third = self._fail("a", "b", "c")
        output = run("robust_queue_status", "--failures", "1")
        self.assertIn("Recent failures (3 failed job(s) in all)", output)
        # The newest failure only.
        self.assertIn(third, output)
        self.assertNotIn(first, output)
        self.assertNotIn(second, output)

    def test_a_negative_failures_count_lists_none(self) -> None:
        (failed,) = self._fail("a")
        output = run("robust_queue_status", "--failures", "-3")
        self.assertIn("Recent failures (1 failed job(s) in all)", output)
        self.assertNotIn(failed, output)
        failures = output.split("Recent failures")[1]
        self.assertIn("(none)", failures)

    def test_ages_read_in_minutes_hours_and_days(self) -> None:
        self._fail("old")
        FailedExecution.objects.update(created_at=timezone.now() - timedelta(hours=2, minutes=5))
        tasks.report.enqueue(1)
        ReadyExecution.objects.update(created_at=timezone.now() - timedelta(minutes=5, seconds=5))
        process = make_process("sleepy")
        Process.objects.filter(pk=process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(days=3, hours=1)
        )
        output = run("robust_queue_status")
        self.assertRegex(output, r"reports\s+1\s+5m\s+no")
        self.assertRegex(output, r"worker\s+sleepy\s+1\s+test\s+3\.0d ago")
        self.assertRegex(output, r"2\.1h ago\s+testproject\.tasks\.fail")

    def test_a_running_job_counts_on_its_queue_and_its_worker(self) -> None:
        worker = make_process("busy-worker")
        Process.objects.filter(pk=worker.pk).update(metadata={"queues": ["slow"], "threads": 2})
        other = make_process("other-worker")
        Process.objects.filter(pk=other.pk).update(metadata={"queues": ["reports"], "threads": 5})
        tasks.sleep_for.using(queue_name="slow").enqueue(1)
        ReadyExecution.objects.claim(1, process_id=worker.pk, worker_id="w")
        output = run("robust_queue_status")
        self.assertRegex(output, r"slow\s+0\s+0s\s+no\s+1 \(1/2 threads busy\)\s+1\s+Running")
        self.assertRegex(output, r"reports\s+0\s+0s\s+no\s+1 \(0/5 threads busy\)\s+0\s+Running")


class RetryFailedEdgeTests(TransactionTestCase):
    def setUp(self) -> None:
        self.failed = tasks.fail.enqueue("kaput")  # builtins.ValueError
        work_off()

    def test_no_match_retries_nothing_and_says_so(self) -> None:
        for args in (
            ("--task", "testproject.tasks.add"),
            ("--queue", "reports"),
            ("--exception", "KeyError"),
        ):
            with self.subTest(args=args):
                self.assertEqual(
                    run("robust_queue_retry_failed", *args), "Retried 0 failed job(s).\n"
                )
                self.assertEqual(FailedExecution.objects.count(), 1)
        self.assertIs(ReadyExecution.objects.exists(), False)

    def test_an_exception_matches_its_whole_class_name_or_path_only(self) -> None:
        for name in ("Error", "alueError", "ins.ValueError", "valueerror", "builtins"):
            with self.subTest(name=name):
                self.assertEqual(
                    run("robust_queue_retry_failed", "--exception", name, "--dry-run"),
                    "Would retry 0 failed job(s).\n",
                )
        for name in ("ValueError", "builtins.ValueError"):
            with self.subTest(name=name):
                self.assertEqual(
                    run("robust_queue_retry_failed", "--exception", name, "--dry-run"),
                    "Would retry 1 failed job(s).\n",
                )

    def test_a_failure_with_a_malformed_error_matches_no_exception(self) -> None:
        """A row written by hand (the error not an object) is retried by a
        plain retry-failed but never matched by ``--exception``."""
        for error in ("ValueError", ["builtins.ValueError"], {"exception_class_path": None}):
            with self.subTest(error=error):
                FailedExecution.objects.update(error=error)
                self.assertEqual(
                    run("robust_queue_retry_failed", "--exception", "ValueError"),
                    "Retried 0 failed job(s).\n",
                )
                self.assertEqual(FailedExecution.objects.count(), 1)
        self.assertEqual(run("robust_queue_retry_failed"), "Retried 1 failed job(s).\n")
        self.assertEqual(
            ReadyExecution.objects.get().job.result_id,
            self.failed.id,
        )

    def test_filters_combine(self) -> None:
        tasks.fail.using(queue_name="reports").enqueue("other queue")
        work_off()
        self.assertEqual(
            run(
                "robust_queue_retry_failed",
                "--task",
                "testproject.tasks.fail",
                "--queue",
                "reports",
                "--exception",
                "ValueError",
            ),
            "Retried 1 failed job(s).\n",
        )
        self.assertEqual(ReadyExecution.objects.get().job.queue_name, "reports")
        self.assertEqual(FailedExecution.objects.get().job.result_id, self.failed.id)


class CommandLineTests(TransactionTestCase):
    """``manage.py robust_queue ...`` as a shell runs it: options before the
    subcommand reach it; a refused command prints why and exits 1."""

    def test_django_options_before_the_subcommand_reach_it(self) -> None:
        out, err, code = from_command_line("--no-color", "-v", "0", "pause", "mail")
        self.assertEqual((out, err, code), ("Queue 'mail' paused.\n", "", 0))
        self.assertIs(Pause.objects.filter(queue_name="mail").exists(), True)

    def test_a_supervisor_option_before_a_subcommand_exits_1(self) -> None:
        out, err, code = from_command_line("--threads", "3", "pause", "mail")
        self.assertEqual((out, code), ("", 1))
        self.assertIn("--threads does not go with the subcommand 'pause'.", err)
        self.assertIs(Pause.objects.exists(), False)

    def test_a_subcommands_refusal_exits_1_naming_the_input(self) -> None:
        out, err, code = from_command_line("pause", "bad queue")
        self.assertEqual((out, code), ("", 1))
        self.assertIn("CommandError:", err)
        self.assertIn("'bad queue'", err)
        self.assertIs(Pause.objects.exists(), False)

    def test_a_subcommand_needs_its_arguments(self) -> None:
        out, err, code = from_command_line("pause")
        self.assertEqual((out, code), ("", 2))
        self.assertIn("robust_queue pause", err)
        self.assertIn("the following arguments are required: QUEUE", err)

    def test_a_subcommands_help_names_it_and_its_arguments(self) -> None:
        out, err, code = from_command_line("pause", "--help")
        self.assertEqual((err, code), ("", 0))
        self.assertTrue(out.startswith("usage: manage.py robust_queue pause "), out[:80])
        self.assertIn("QUEUE [QUEUE ...]", out)
        self.assertIn("--database DATABASE", out)
        self.assertIs(Pause.objects.exists(), False)

    def test_the_version_is_robust_queues(self) -> None:
        for words in (("--version",), ("status", "--version"), ("cancel", "--version")):
            with self.subTest(words=words):
                self.assertEqual(from_command_line(*words), (f"{__version__}\n", "", 0))

    def test_a_bad_option_value_exits_2_naming_the_option(self) -> None:
        out, err, code = from_command_line("status", "--failures", "many")
        self.assertEqual((out, code), ("", 2))
        self.assertIn("usage: manage.py robust_queue status", err)
        self.assertIn("argument --failures: invalid int value: 'many'", err)

    def test_cancelling_the_same_id_twice_reports_the_second_as_failed(self) -> None:
        """Every id is reported in order: the first cancels, the second
        finds the job already ended, and the exit code says not all were."""
        result = tasks.add.enqueue(1, 2)
        out, err, code = from_command_line("cancel", "--", result.id, result.id)
        self.assertEqual(code, 1)
        self.assertEqual(out, f"{result.id}: cancelled\n")
        self.assertEqual(
            err,
            f"{result.id}: error: Job {result.id} has already failed; only a waiting "
            "or running job can be cancelled.\n",
        )
        self.assertEqual(FailedExecution.objects.filter(job__result_id=result.id).count(), 1)

    @override_settings(ROBUST_QUEUE={"maintenance_interval": [60]})
    def test_health_refuses_invalid_settings_by_name(self) -> None:
        with self.assertRaisesMessage(
            CommandError, 'Invalid ROBUST_QUEUE settings: ROBUST_QUEUE["maintenance_interval"]'
        ):
            call_command("robust_queue_health", "--skip-supervisor", stdout=StringIO())

    def test_health_refuses_a_bad_queue_name(self) -> None:
        with self.assertRaisesMessage(CommandError, "argument --queue:"):
            call_command("robust_queue_health", "--queue", "bad queue", stdout=StringIO())
