"""Recognising a deadlock or lock-wait timeout, and running a transaction
again after one. The operations raise Django's own errors, as the drivers'
errors come wrapped (no database; inside a transaction:
tests/integration/test_lock_conflict_in_transaction.py)."""

from __future__ import annotations

from unittest import mock

from django.db import IntegrityError, OperationalError
from django.test import SimpleTestCase

from robust_queue.models.sql import deadlocks
from robust_queue.models.sql.deadlocks import retry_on_lock_conflict
from tests.unit.sql.support import dialect


class DriverError(Exception):
    """Stands for a driver's exception, the ``__cause__`` Django keeps."""

    def __init__(self, *args: object, sqlstate: str | None = None) -> None:
        super().__init__(*args)
        self.sqlstate = sqlstate


def wrapped(cause: BaseException) -> OperationalError:
    error = OperationalError(*cause.args)
    error.__cause__ = cause
    return error


class LockConflictTests(SimpleTestCase):
    """Each vendor's dialect names its own lock conflicts."""

    def test_postgresql_sqlstates(self) -> None:
        postgresql, _ = dialect("postgresql")
        conflict = postgresql.lock_conflict
        self.assertEqual(conflict(wrapped(DriverError("x", sqlstate="40P01"))), "deadlock")
        self.assertEqual(conflict(wrapped(DriverError("x", sqlstate="55P03"))), "lock wait timeout")
        self.assertIsNone(conflict(wrapped(DriverError("x", sqlstate="23505"))))
        self.assertIsNone(conflict(OperationalError(1213, "Deadlock found")))

    def test_mysql_error_codes(self) -> None:
        mysql, _ = dialect("mysql")
        self.assertEqual(mysql.lock_conflict(OperationalError(1213, "Deadlock found")), "deadlock")
        self.assertEqual(
            mysql.lock_conflict(OperationalError(1205, "Lock wait timeout")), "lock wait timeout"
        )
        self.assertEqual(mysql.lock_conflict(wrapped(DriverError(1213, "x"))), "deadlock")

    def test_other_errors_are_not_conflicts(self) -> None:
        for vendor in ("postgresql", "mysql", "sqlite"):
            conflict = dialect(vendor)[0].lock_conflict
            with self.subTest(vendor=vendor):
                self.assertIsNone(conflict(OperationalError(2013, "Lost connection")))
                self.assertIsNone(conflict(OperationalError("database is locked")))
                self.assertIsNone(conflict(RuntimeError(1213)))
                if vendor != "postgresql":
                    self.assertIsNone(conflict(wrapped(DriverError("x", sqlstate="40P01"))))


class RetryTests(SimpleTestCase):
    def setUp(self) -> None:
        sleeps = mock.patch.object(deadlocks.time, "sleep")
        self.sleep = sleeps.start()
        self.addCleanup(sleeps.stop)
        # The errors below are MySQL's: classified by its dialect.
        mysql, _ = dialect("mysql")
        dialects = mock.patch.object(deadlocks, "dialect_for", return_value=mysql)
        dialects.start()
        self.addCleanup(dialects.stop)

    def flaky(self, failures: list[BaseException]):  # type: ignore[no-untyped-def]
        calls = []

        def operation() -> str:
            calls.append(1)
            if failures:
                raise failures.pop(0)
            return "done"

        return operation, calls

    def test_a_conflict_runs_the_operation_again(self) -> None:
        operation, calls = self.flaky(
            [OperationalError(1213, "Deadlock"), OperationalError(1205, "wait")]
        )
        with self.assertLogs(deadlocks.logger, "WARNING") as logs:
            self.assertEqual(
                retry_on_lock_conflict(operation, using="default", what="Claim"), "done"
            )
        self.assertEqual(len(calls), 3)
        self.assertIn("Claim: deadlock on 'default'; retrying in", logs.output[0])
        self.assertIn("(attempt 2 of 5)", logs.output[0])
        self.assertEqual(self.sleep.call_count, 2)
        for (delay,), _ in self.sleep.call_args_list:
            self.assertLessEqual(delay, deadlocks.MAX_DELAY)

    def test_it_gives_up_after_its_attempts(self) -> None:
        operation, calls = self.flaky([OperationalError(1213, "Deadlock")] * 3)
        with (
            self.assertLogs(deadlocks.logger, "WARNING") as logs,
            self.assertRaises(OperationalError),
        ):
            retry_on_lock_conflict(operation, using="default", what="Finish", attempts=3)
        self.assertEqual(len(calls), 3)
        self.assertIn("Finish: deadlock on 'default'; gave up after 3 attempts", logs.output[-1])

    def test_any_other_error_is_raised_at_once(self) -> None:
        operation, calls = self.flaky([IntegrityError("duplicate key")])
        with self.assertRaises(IntegrityError):
            retry_on_lock_conflict(operation, using="default", what="Enqueue")
        self.assertEqual((len(calls), self.sleep.call_count), (1, 0))
