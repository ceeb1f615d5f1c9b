"""`robust_queue health` reads the database server's upkeep: dead rows in
the queue tables (PostgreSQL) and the oldest open transaction (PostgreSQL,
MySQL/MariaDB), with thresholds that warn (settings) and fail (flags).

Other test cells share the servers, so a transaction reported as the
oldest may be another's: the tests open one of their own, held long
enough, and check only what that bounds (the oldest is at least that old).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import connection, connections
from django.test import TestCase, TransactionTestCase, override_settings

from robust_queue.models.sql import dialect_for
from robust_queue.operations import health, table_health
from robust_queue.processes.config import SupervisorConfig
from tests.connections import LOCK_POLL
from tests.helpers import wait_until

from .test_health import checks, run_health

SERVERS = ("postgresql", "mysql")
T = TypeVar("T")


def run(**thresholds: Any) -> health.Report:
    return health.check(
        SupervisorConfig(database="default"),
        health.Thresholds(check_supervisor=False, **thresholds),
    )


def outcome(report: health.Report, name: str) -> tuple[bool, str]:
    return next((c.ok, c.detail) for c in report.checks if c.name == name)


@contextmanager
def open_transaction() -> Iterator[int]:
    """A read transaction with a snapshot on a second connection, open for
    the block: its session id."""
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            if other.vendor == "postgresql":
                cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                session = other.connection.info.backend_pid
            else:
                cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                session = other.connection.thread_id()
            cursor.execute("SELECT count(*) FROM robust_queue_job")
            yield session
            cursor.execute("ROLLBACK")
    finally:
        other.close()


def once_aged(read: Callable[[], T], age: Callable[[T], float | None], least: float = 1.4) -> T:
    """What ``read()`` gives once the oldest transaction it reports is
    ``least`` seconds old, the last reading if that takes 30 s (the test's
    assertions then say what it was). Read at LOCK_POLL's pace: MariaDB's
    INNODB_TRX does not change while anyone reads it more often."""
    readings: list[T] = []

    def aged() -> bool:
        readings.append(read())
        seen = age(readings[-1])
        return seen is not None and seen >= least

    try:
        wait_until(aged, timeout=30, interval=LOCK_POLL)
    except AssertionError:
        pass
    return readings[-1]


def oldest_age(upkeep: dict[str, Any]) -> float | None:
    """The oldest transaction's age in a report's ``table_health``, if any."""
    oldest = upkeep["oldest_transaction"]
    return None if oldest is None else float(oldest["age_seconds"])


def report_age(report: health.Report) -> float | None:
    return oldest_age(report.table_health)


class OldestTransactionTests(TransactionTestCase):
    def setUp(self) -> None:
        if connection.vendor not in SERVERS:
            self.skipTest("a server's transactions (SQLite: not applicable, tested below)")

    def test_an_open_transaction_is_reported_with_its_age(self) -> None:
        with open_transaction():
            report = once_aged(run, report_age)
            ok, detail = outcome(report, "transactions")
        self.assertIs(ok, True, detail)
        oldest = report.table_health["oldest_transaction"]
        self.assertIsNotNone(oldest, detail)
        self.assertGreaterEqual(oldest["age_seconds"], 1.4)
        self.assertIn("open", detail)
        self.assertEqual(set(oldest), {"age_seconds", "session", "database", "state", "query"})

    def test_the_flag_fails_the_check_past_its_age(self) -> None:
        with open_transaction():
            report = once_aged(lambda: run(max_transaction_age=1.0), report_age)
        ok, detail = outcome(report, "transactions")
        self.assertIs(ok, False, detail)
        self.assertIn("more than 1s", detail)
        self.assertIs(report.healthy, False)

    def test_the_setting_warns_past_its_age(self) -> None:
        with override_settings(ROBUST_QUEUE={"health_transaction_age": 1}), open_transaction():
            report = once_aged(run, report_age)
        self.assertIs(outcome(report, "transactions")[0], True)
        self.assertTrue(
            any("health_transaction_age" in warning for warning in report.warnings),
            report.warnings,
        )
        self.assertIs(report.healthy, True)

    def test_no_warning_below_the_setting(self) -> None:
        with override_settings(ROBUST_QUEUE={"health_transaction_age": None}), open_transaction():
            report = run()
        self.assertFalse([w for w in report.warnings if "health_transaction_age" in w])

    def test_the_command_fails_and_prints_json(self) -> None:
        with open_transaction():
            code, report = once_aged(
                lambda: run_health("--skip-supervisor", "--max-transaction-age", "1s"),
                lambda result: oldest_age(result[1]["table_health"]),
            )
        self.assertEqual(code, 1, report)
        ok, detail = checks(report)["transactions"]
        self.assertIs(ok, False, detail)
        self.assertGreaterEqual(report["table_health"]["oldest_transaction"]["age_seconds"], 1.4)

    def test_the_dialect_sees_the_session(self) -> None:
        """The oldest transaction is one of the server's, never this session's."""
        with open_transaction() as session:
            oldest = once_aged(
                dialect_for("default").oldest_transaction,
                lambda found: None if found is None else found.age,
                least=0.1,
            )
            own = (
                connection.connection.info.backend_pid
                if connection.vendor == "postgresql"
                else connection.connection.thread_id()
            )
        self.assertIsNotNone(oldest)
        assert oldest is not None
        self.assertNotEqual(oldest.session, own)
        self.assertGreaterEqual(oldest.age, 0.1)
        del session


class DeadTupleTests(TransactionTestCase):
    table = "robust_queue_pause"

    def setUp(self) -> None:
        if connection.vendor != "postgresql":
            self.skipTest("PostgreSQL counts dead rows (MariaDB: tested below)")
        with connection.cursor() as cursor:
            # Autovacuum must not remove them while the test reads.
            cursor.execute(f"ALTER TABLE {self.table} SET (autovacuum_enabled = false)")
        self.addCleanup(self._vacuum)

    def _vacuum(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {self.table} RESET (autovacuum_enabled)")
            cursor.execute(f"VACUUM {self.table}")

    def _dead(self, count: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self.table} (queue_name, created_at) "
                "SELECT 'dead-' || i, now() FROM generate_series(1, %s) AS i",
                [count],
            )
            cursor.execute(f"DELETE FROM {self.table} WHERE queue_name LIKE 'dead-%%'")
            cursor.execute("SELECT pg_stat_force_next_flush()")

        def counted() -> bool:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_stat_clear_snapshot()")
            rows = dialect_for("default").dead_rows([self.table])
            return bool(rows and rows[0].dead >= count)

        wait_until(counted, timeout=15)

    def test_dead_rows_are_read_per_table(self) -> None:
        self._dead(table_health.MIN_DEAD_ROWS)
        report = run()
        rows = {row["table"]: row for row in report.table_health["dead_tuples"]}
        self.assertIn("robust_queue_job", rows)
        self.assertGreaterEqual(rows[self.table]["dead"], table_health.MIN_DEAD_ROWS)
        self.assertEqual(rows[self.table]["live"], 0)
        ok, detail = outcome(report, "dead_tuples")
        self.assertIs(ok, True, detail)
        self.assertIn(self.table, detail)
        self.assertTrue(any(self.table in w for w in report.warnings), report.warnings)

    def test_the_flag_fails_the_check(self) -> None:
        self._dead(table_health.MIN_DEAD_ROWS)
        report = run(max_dead_tuple_ratio=2.0)
        ok, detail = outcome(report, "dead_tuples")
        self.assertIs(ok, False, detail)
        self.assertIn(f"more than 2 dead rows per live row in: {self.table}", detail)

    def test_few_dead_rows_never_count(self) -> None:
        self._dead(100)
        with override_settings(ROBUST_QUEUE={"health_dead_tuple_ratio": 0.01}):
            report = run(max_dead_tuple_ratio=0.01)
        self.assertIs(outcome(report, "dead_tuples")[0], True)
        self.assertFalse([w for w in report.warnings if self.table in w])


class NotApplicableTests(TestCase):
    def test_each_vendor_says_what_applies(self) -> None:
        report = run()
        dead_ok, dead = outcome(report, "dead_tuples")
        transactions_ok, transactions = outcome(report, "transactions")
        self.assertIs(dead_ok, True)
        self.assertIs(transactions_ok, True)
        data = report.table_health
        if connection.vendor == "sqlite":
            self.assertEqual(dead, "not applicable (SQLite)")
            self.assertEqual(transactions, "not applicable (SQLite)")
            self.assertEqual(
                data,
                {"dead_tuples": None, "oldest_transaction": None, "history_list_length": None},
            )
        elif connection.vendor == "mysql":
            self.assertIn("not applicable", dead)
            self.assertIn("InnoDB purges deleted rows itself; history list length", dead)
            self.assertIsInstance(data["history_list_length"], int)
        else:
            self.assertIsInstance(data["dead_tuples"], list)
            self.assertIsNone(data["history_list_length"])

    def test_the_json_carries_what_was_read(self) -> None:
        code, report = run_health("--skip-supervisor")
        self.assertEqual(code, 0, report)
        self.assertEqual(
            set(report["table_health"]),
            {"dead_tuples", "oldest_transaction", "history_list_length"},
        )
        self.assertIn("transactions", checks(report))

    def test_bad_flag_values_are_refused(self) -> None:
        from django.core.management import CommandError, call_command

        with self.assertRaisesMessage(CommandError, "must be a number more than 0"):
            call_command("robust_queue_health", "--max-dead-tuple-ratio", "lots")

    def test_bad_settings_are_refused(self) -> None:
        from robust_queue import conf
        from robust_queue.exceptions import ConfigurationError

        with override_settings(ROBUST_QUEUE={"health_dead_tuple_ratio": 0}):
            with self.assertRaisesMessage(ConfigurationError, "must be a number more than 0"):
                conf.get(conf.HEALTH_DEAD_TUPLE_RATIO)
        with override_settings(ROBUST_QUEUE={"health_transaction_age": "5m"}):
            with self.assertRaises(ConfigurationError):
                conf.get(conf.HEALTH_TRANSACTION_AGE)
