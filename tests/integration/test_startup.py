"""What `manage.py robust_queue` checks before it starts (and `--check` reports)."""

from __future__ import annotations

from dataclasses import replace
from io import StringIO

from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import TestCase, override_settings

from robust_queue.models import Queue
from robust_queue.operations import startup
from robust_queue.processes.config import SupervisorConfig, WorkerConfig
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim, make_process


def config_polling(*queues: str) -> SupervisorConfig:
    return replace(SupervisorConfig(), workers=(WorkerConfig(queues=queues),))


def ids(config: SupervisorConfig) -> list[str]:
    return [message.id or "" for message in startup.check(config)]


class MigrationCheckTests(TestCase):
    def test_a_migrated_database_passes(self) -> None:
        self.assertEqual(startup.unapplied_migrations("default"), [])
        self.assertEqual(startup.check(SupervisorConfig()), [])

    def test_unapplied_migrations_say_run_migrate(self) -> None:
        recorder = MigrationRecorder(connection)
        last = recorder.migration_qs.filter(app="robust_queue").order_by("-name").first()
        assert last is not None
        recorder.record_unapplied("robust_queue", last.name)
        [message] = startup.check(SupervisorConfig())
        self.assertEqual(message.id, "robust_queue.E022")
        self.assertIn(f"robust_queue.{last.name}", message.msg)
        self.assertEqual(message.hint, "Run `python manage.py migrate` first.")

    def test_a_separate_queue_database_names_it_in_the_hint(self) -> None:
        message = startup._migrate("queue", ["robust_queue.0001_initial"])
        self.assertEqual(message.hint, "Run `python manage.py migrate --database queue` first.")


class QueueCoverageTests(TestCase):
    def test_a_worker_queue_no_task_uses_is_a_warning(self) -> None:
        [message] = startup.check(config_polling("default", "reprots"))
        self.assertEqual(message.id, "robust_queue.W020")
        self.assertIn("'reprots'", message.msg)
        self.assertIn("Did you mean 'reports'?", message.hint or "")

    def test_queues_of_tasks_and_of_waiting_jobs_are_known(self) -> None:
        tasks.add.using(queue_name="adhoc").enqueue(1, 1)
        self.assertEqual(ids(config_polling("reports", "default", "adhoc", "rep*")), [])
        self.assertEqual(ids(config_polling("*")), [])

    def test_a_queue_whose_jobs_run_or_ran_is_in_use(self) -> None:
        """A queue chosen with .using(queue_name=...) is in use while its
        job runs (no ready row left) and after it finished (issue 28 §8)."""
        tasks.add.using(queue_name="adhoc-report").enqueue(1, 1)
        self.assertIn("robust_queue.W020", ids(config_polling("default", "maill*")))
        [claimed] = claim(process=make_process())
        for selector in ("adhoc-report", "adhoc*"):
            with self.subTest(running=selector):
                self.assertEqual(ids(config_polling("default", selector)), [])
        perform(claimed)
        self.assertEqual(ids(config_polling("default", "adhoc-report", "adhoc*")), [])
        self.assertEqual(
            ids(config_polling("default", "adhoc-x", "adhoc-z*")), ["robust_queue.W020"] * 2
        )

    def test_a_prefix_that_matches_no_known_queue_is_a_warning(self) -> None:
        self.assertEqual(ids(config_polling("*", "mail*")), ["robust_queue.W020"])

    def test_ready_jobs_in_a_queue_no_worker_polls_are_a_warning(self) -> None:
        tasks.add.using(queue_name="adhoc").enqueue(1, 1)
        [message] = startup.check(config_polling("default", "reports"))
        self.assertEqual(message.id, "robust_queue.W021")
        self.assertIn("Queue 'adhoc' has ready jobs but no worker polls it", message.msg)

    def test_a_paused_queue_or_a_host_without_workers_is_not_warned_about(self) -> None:
        tasks.add.using(queue_name="adhoc").enqueue(1, 1)
        self.assertEqual(ids(SupervisorConfig().only("dispatch")), [])
        Queue("adhoc").pause()
        self.assertEqual(ids(config_polling("default", "reports")), [])


class CheckOptionTests(TestCase):
    @override_settings(ROBUST_QUEUE={"worker": []})
    def test_check_reuses_the_system_checks_even_when_django_skips_them(self) -> None:
        """call_command() skips system checks; --check still reports the key."""
        with self.assertRaisesMessage(CommandError, "unknown key 'worker'"):
            call_command("robust_queue", "--check", stdout=StringIO())

    def test_check_passes_the_test_project(self) -> None:
        out = StringIO()
        call_command("robust_queue", "--check", stdout=out)
        self.assertIn("configuration is valid", out.getvalue())
