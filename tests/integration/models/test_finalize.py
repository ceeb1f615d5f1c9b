"""A finalize that fails never strands a job (real databases, real threads)."""

from __future__ import annotations

import logging
import tempfile
import threading
from pathlib import Path
from unittest import skipIf, skipUnless

from django.conf import settings
from django.db import connection, connections, transaction
from django.test import TestCase, TransactionTestCase, override_settings

from robust_queue.compat import TaskResultStatus, task_finished
from robust_queue.models import ClaimedExecution, Job, JobState
from robust_queue.models.error_record import DEFAULT_MAX_ERROR_CHARS
from robust_queue.running.finalizing import Finalized, record_success
from robust_queue.running.performing import perform
from testproject import finalize_tasks, tasks
from testproject.finalize_tasks import AWKWARD, nested
from testproject.models import LedgerEntry
from tests.connections import kill_lock_waiters
from tests.helpers import claim, wait_until, work_off

FINALIZE_ERROR = "robust_queue.exceptions.FinalizeError"
IS_POSTGRESQL = connection.vendor == "postgresql"
IS_MYSQL = connection.vendor == "mysql"


def job_of(result_id: str) -> Job:
    return Job.objects.with_executions().get(result_id=result_id)


def with_options(**options: object) -> override_settings:
    tasks_setting = {**settings.TASKS}
    default = tasks_setting["default"]
    tasks_setting["default"] = {**default, "OPTIONS": {**default["OPTIONS"], **options}}
    return override_settings(TASKS=tasks_setting)


class RefusedOutcomeTests(TransactionTestCase):
    """A value the database refuses ends the job FAILED, never claimed."""

    def test_awkward_return_text_is_stored_or_replaced_by_a_finalize_error(self) -> None:
        """PostgreSQL refuses NUL and lone surrogates in JSON (DataError),
        MariaDB lone surrogates (IntegrityError 4025); SQLite stores both."""
        refused = {"postgresql": ("nul", "surrogate"), "mysql": ("surrogate",)}
        why = {"postgresql": "DataError", "mysql": "IntegrityError"}
        for kind, escaped in [("nul", "before\\x00after"), ("surrogate", "before\\ud800after")]:
            with self.subTest(kind):
                result = finalize_tasks.returns_awkward.enqueue(kind)
                self.assertEqual(work_off(), 1)
                job = job_of(result.id)
                fetched = finalize_tasks.returns_awkward.get_result(result.id)
                if kind not in refused.get(connection.vendor, ()):
                    self.assertEqual(job.state, JobState.FINISHED)
                    self.assertEqual(fetched.return_value, AWKWARD[kind])
                    continue
                self.assertEqual(job.state, JobState.FAILED)
                [error] = fetched.errors
                self.assertEqual(error.exception_class_path, FINALIZE_ERROR)
                self.assertIn("refused the return value", error.traceback)
                self.assertIn(f"django.db.utils.{why[connection.vendor]}", error.traceback)
                self.assertIn(escaped, error.traceback)
                self.assertEqual(job.failed_execution.error["exception_class_path"], FINALIZE_ERROR)

    @skipIf(connection.vendor == "sqlite", "SQLite stores lone surrogates")
    def test_task_finished_reports_a_replaced_outcome_as_failed(self) -> None:
        seen: list = []

        def receiver(sender: object, task_result: object, **kwargs: object) -> None:
            seen.append(task_result)

        task_finished.connect(receiver)
        self.addCleanup(task_finished.disconnect, receiver)
        finalize_tasks.returns_awkward.enqueue("surrogate")
        work_off()
        [result] = seen
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertEqual([e.exception_class_path for e in result.errors], [FINALIZE_ERROR])

    def test_awkward_error_messages_are_stored_escaped(self) -> None:
        for kind, escaped in [("nul", "before\\x00after"), ("surrogate", "before\\ud800after")]:
            with self.subTest(kind):
                result = finalize_tasks.raises_awkward.enqueue(kind)
                work_off()
                self.assertEqual(job_of(result.id).state, JobState.FAILED)
                [error] = finalize_tasks.raises_awkward.get_result(result.id).errors
                self.assertEqual(error.exception_class_path, "builtins.ValueError")
                self.assertIn(f"ValueError: {escaped}", error.traceback)

    def test_a_ten_megabyte_error_message_is_stored_cut_with_a_marker(self) -> None:
        result = finalize_tasks.raises_long.enqueue(10_000_000)
        work_off()
        job = job_of(result.id)
        self.assertEqual(job.state, JobState.FAILED)
        for stored in (job.errors[0], job.failed_execution.error):
            self.assertLessEqual(len(stored["traceback"]), DEFAULT_MAX_ERROR_CHARS)
            self.assertIn("characters truncated", stored["traceback"])
            self.assertTrue(stored["traceback"].rstrip().endswith("m" * 1000))

    def test_a_return_value_nested_too_deep_fails_with_return_value_error(self) -> None:
        """MariaDB refuses 32 levels (IntegrityError 4025): refused up front, everywhere."""
        deep = finalize_tasks.returns_nested.enqueue(32)
        fine = finalize_tasks.returns_nested.enqueue(31)
        work_off()
        self.assertEqual(job_of(deep.id).state, JobState.FAILED)
        [error] = finalize_tasks.returns_nested.get_result(deep.id).errors
        self.assertEqual(error.exception_class_path, "robust_queue.exceptions.ReturnValueError")
        self.assertIn("nested more than 31", error.traceback)
        self.assertEqual(finalize_tasks.returns_nested.get_result(fine.id).return_value, nested(31))

    def test_a_return_value_over_the_size_limit_fails_with_return_value_error(self) -> None:
        with with_options(max_return_value_bytes=1000):
            big = finalize_tasks.returns_text.enqueue(1000)
            small = finalize_tasks.returns_text.enqueue(998)
            work_off()
        [error] = finalize_tasks.returns_text.get_result(big.id).errors
        self.assertEqual(error.exception_class_path, "robust_queue.exceptions.ReturnValueError")
        self.assertIn("1002 bytes as JSON, over the limit of 1000", error.traceback)
        self.assertEqual(finalize_tasks.returns_text.get_result(small.id).return_value, "x" * 998)

    @skipIf(connection.vendor == "sqlite", "SQLite stores any JSON of any depth and size")
    def test_a_value_the_database_refuses_is_replaced_by_a_finalize_error(self) -> None:
        """The permanent path itself, past the up-front checks."""
        refused = "\x00" if IS_POSTGRESQL else nested(40)
        why = "DataError" if IS_POSTGRESQL else "IntegrityError"
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim()
        with self.assertLogs("robust_queue.running.finalizing", logging.ERROR):
            self.assertIs(record_success(claimed, refused), Finalized.REPLACED)
        job = job_of(result.id)
        self.assertEqual(job.state, JobState.FAILED)
        self.assertEqual(job.errors[0]["exception_class_path"], FINALIZE_ERROR)
        self.assertIn(f"django.db.utils.{why}", job.errors[0]["traceback"])
        self.assertIs(record_success(claimed, 3), Finalized.SKIPPED)

    @skipUnless(IS_MYSQL, "max_allowed_packet is MySQL's and MariaDB's")
    def test_a_value_over_max_allowed_packet_is_replaced_by_a_finalize_error(self) -> None:
        """Error 1153 (or a lost connection right after) is permanent."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@max_allowed_packet")
            (packet,) = cursor.fetchone()
        with with_options(max_return_value_bytes=packet * 2):
            result = finalize_tasks.returns_text.enqueue(packet + 1024)
            work_off()
        job = job_of(result.id)
        self.assertEqual(job.state, JobState.FAILED)
        [error] = job.errors
        self.assertEqual(error["exception_class_path"], FINALIZE_ERROR)
        self.assertIn("refused the return value", error["traceback"])
        self.assertLessEqual(len(error["traceback"]), 20_000)


class MalformedArgumentsTests(TestCase):
    """Arguments that cannot be decoded fail the job with DeserializationError."""

    def test_a_hand_edited_arguments_column_fails_the_job(self) -> None:
        for bad in ["garbage", [1, 2], {"args": "x"}, {"args": [], "kwargs": [1]}]:
            with self.subTest(bad=bad):
                result = tasks.add.enqueue(1, 2)
                Job.objects.filter(result_id=result.id).update(arguments=bad)
                work_off()
                job = job_of(result.id)
                self.assertEqual(job.state, JobState.FAILED)
                [error] = job.errors
                self.assertEqual(
                    error["exception_class_path"], "robust_queue.exceptions.DeserializationError"
                )
                self.assertIn("stored arguments are not", error["traceback"])

    def test_get_result_reads_a_job_whose_arguments_are_malformed(self) -> None:
        """get_result shows the job's real state and the stored values,
        before and after its run, never a decoding error."""
        bad_tag = {"args": [{"__rq__": "nope", "v": 1}], "kwargs": {}}
        for bad in ["garbage", [1, 2], {"args": "x"}, bad_tag]:
            with self.subTest(bad=bad):
                result = tasks.add.enqueue(1, 2)
                Job.objects.filter(result_id=result.id).update(arguments=bad)
                waiting = tasks.add.get_result(result.id)
                self.assertEqual(waiting.status, TaskResultStatus.READY)
                expected = bad_tag["args"] if bad is bad_tag else []
                self.assertEqual(waiting.args, expected)
                work_off()
                failed = tasks.add.get_result(result.id)
                self.assertEqual(failed.status, TaskResultStatus.FAILED)

    def test_a_model_reference_that_cannot_be_rebuilt_fails_the_job(self) -> None:
        result = tasks.echo.enqueue(1)
        reference = {"__rq__": "model", "v": {"model": "testproject.ledgerentry", "pk": "x"}}
        Job.objects.filter(result_id=result.id).update(
            arguments={"args": [reference], "kwargs": {}}
        )
        work_off()
        fetched = tasks.echo.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        [error] = fetched.errors
        self.assertEqual(error.exception_class_path, "robust_queue.exceptions.DeserializationError")
        self.assertIn("Malformed 'model' argument", error.traceback)


class TransientFinalizeTests(TransactionTestCase):
    """A transient error is retried for as long as it lasts."""

    def perform_in_thread(self, claimed: ClaimedExecution) -> tuple[threading.Thread, dict]:
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["finalized"] = perform(claimed)
            finally:
                connections.close_all()

        thread = threading.Thread(target=run)
        thread.start()
        self.addCleanup(thread.join, 60)
        return thread, outcome

    def go_file(self) -> Path:
        path = Path(tempfile.mkdtemp()) / "go"
        self.addCleanup(path.unlink, missing_ok=True)
        return path

    @skipIf(connection.vendor == "sqlite", "SQLite sessions cannot be killed")
    def test_finalize_retries_through_repeatedly_killed_connections(self) -> None:
        go = self.go_file()
        result = finalize_tasks.record_when_allowed.enqueue("once", str(go))
        [claimed] = claim()
        thread, outcome = self.perform_in_thread(claimed)
        wait_until(LedgerEntry.objects.exists, timeout=30)
        with transaction.atomic():
            ClaimedExecution.objects.select_for_update().get(pk=claimed.pk)
            go.touch()
            # More than the five attempts finalize used to make.
            kill_lock_waiters(times=6)
        thread.join(60)
        self.assertIs(outcome.get("finalized"), True)
        fetched = finalize_tasks.record_when_allowed.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(fetched.return_value, "once")
        self.assertEqual(LedgerEntry.objects.count(), 1)

    @skipUnless(connection.vendor == "sqlite", "SQLite's database lock")
    def test_finalize_retries_while_the_database_is_locked(self) -> None:
        go = self.go_file()
        result = finalize_tasks.record_when_allowed.enqueue("once", str(go), 50)
        [claimed] = claim()
        with self.assertLogs("robust_queue.running.finalizing", logging.WARNING) as logs:
            thread, outcome = self.perform_in_thread(claimed)
            wait_until(LedgerEntry.objects.exists, timeout=30)
            with transaction.atomic():  # IMMEDIATE: holds the write lock
                LedgerEntry.objects.create(key="lock")
                go.touch()
                wait_until(lambda: len(logs.output) >= 3, timeout=30)
            thread.join(60)
        self.assertIs(outcome.get("finalized"), True)
        self.assertIn("database is locked", logs.output[0])
        fetched = finalize_tasks.record_when_allowed.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
