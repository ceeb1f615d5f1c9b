"""MySQL/MariaDB's statements, built without a database."""

from __future__ import annotations

import types
from unittest import mock

from django.db import OperationalError
from django.test import SimpleTestCase

from .support import NOW, dialect


class MySQLStatementTests(SimpleTestCase):
    def setUp(self) -> None:
        self.dialect, self.wrapper = dialect("mysql")

    def test_tables_are_quoted_with_backticks(self) -> None:
        self.assertEqual(self.dialect.tables.job, "`robust_queue_job`")

    def test_the_claim_appends_the_worker_with_json_array_append(self) -> None:
        sql, params = self.dialect.stamp_jobs([4, 5], "w-1", NOW)
        self.assertEqual(
            sql,
            "UPDATE `robust_queue_job` SET started_at = COALESCE(started_at, %s), "
            "last_attempted_at = %s, worker_ids = JSON_ARRAY_APPEND(worker_ids, '$', %s) "
            "WHERE id IN (%s, %s)",
        )
        # Naive, in the connection's time zone (UTC here), as Django stores it.
        self.assertEqual(params, ["2026-01-02 03:04:05.678901"] * 2 + ["w-1", 4, 5])

    def test_task_paths_of_pauses_compare_as_bytes(self) -> None:
        """A column that ignores case must not match another task's path."""
        guard = self.dialect.task_pause_filter(["t.f"])
        self.assertIn("ON BINARY p.task_path = BINARY j.task_path", guard)
        self.assertEqual(
            self.dialect.task_pause_filter([]),
            "NOT EXISTS (SELECT 1 FROM `robust_queue_task_pause`)",
        )

    def test_statistics_add_on_duplicate_key(self) -> None:
        sql = self.dialect.upsert_adding("robust_queue_statistic", ["minute"], ["finished"], 1)
        self.assertEqual(
            sql,
            "INSERT INTO `robust_queue_statistic` (`minute`, `finished`) VALUES (%s, %s) "
            "ON DUPLICATE KEY UPDATE `finished` = `finished` + VALUES(`finished`)",
        )

    def test_a_duplicate_insert_is_ignored(self) -> None:
        self.assertEqual(
            self.dialect.insert_ignoring_duplicates("`t`", "(a) VALUES (%s)"),
            "INSERT IGNORE INTO `t` (a) VALUES (%s)",
        )

    def test_upserts_name_no_conflict_target(self) -> None:
        """ON DUPLICATE KEY takes none: Django refuses unique_fields here."""
        self.assertIsNone(self.dialect.upsert_target(["key"]))

    def test_the_finish_stores_the_return_value_as_json_text(self) -> None:
        sql, params = self.dialect.finish_job(9, NOW, {"a": [1]})
        self.assertEqual(
            sql, "UPDATE `robust_queue_job` SET finished_at = %s, return_value = %s WHERE id = %s"
        )
        self.assertEqual(params, ["2026-01-02 03:04:05.678901", '{"a": [1]}', 9])

    def test_error_codes_are_the_drivers_first_argument(self) -> None:
        self.assertEqual(self.dialect.error_code(OperationalError(2013, "Lost connection")), 2013)
        self.assertIsNone(self.dialect.error_code(OperationalError("no code")))
        self.assertIsNone(self.dialect.error_code(OperationalError()))

    def test_lock_waits_are_innodbs_in_whole_seconds(self) -> None:
        self.assertEqual(self.dialect._lock_wait_value(3), 3)
        assert self.dialect._LOCK_WAIT is not None
        self.assertIn("innodb_lock_wait_timeout", self.dialect._LOCK_WAIT[1])

    def test_idle_workers_watch_the_newest_ready_id(self) -> None:
        """No LISTEN: the listener reads the newest ready id (its test is in
        tests/integration/processes/test_ready_watch.py)."""
        self.assertIs(self.dialect.supports_listen, True)

    def test_only_mysqlclient_gets_several_statements_per_text(self) -> None:
        """mysqlclient sends them unless OPTIONS say no; PyMySQL installed
        as MySQLdb and MySQL Connector/Python send one per call."""
        self.assertIs(self.dialect._sends_many, True)
        with mock.patch.dict(self.wrapper.settings_dict["OPTIONS"], {"multi_statements": False}):
            self.assertIs(self.dialect._sends_many, False)
        for driver in ("pymysql", "mysql.connector"):
            with mock.patch.object(self.wrapper, "Database", types.ModuleType(driver)):
                self.assertIs(self.dialect._sends_many, False)
