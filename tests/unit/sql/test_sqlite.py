"""SQLite's statements, built without a database."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.models.sql import queue_filter

from .support import NOW, dialect


class SQLiteStatementTests(SimpleTestCase):
    def setUp(self) -> None:
        self.dialect, self.wrapper = dialect("sqlite")

    def test_lock_ready_takes_no_row_locks(self) -> None:
        """The IMMEDIATE transaction is SQLite's lock: no FOR UPDATE."""
        sql, params = self.dialect.lock_ready(5, queue_filter("mail", []))
        self.assertEqual(
            sql,
            'SELECT id, job_id FROM "robust_queue_ready_execution" WHERE queue_name = %s '
            "ORDER BY priority DESC, fair_round, job_id LIMIT %s",
        )
        self.assertEqual(params, ["mail", 5])
        self.assertEqual(self.dialect.for_update(), "")

    def test_the_claim_appends_the_worker_with_json_insert(self) -> None:
        sql, _ = self.dialect.stamp_jobs([1], "w", NOW)
        self.assertIn("worker_ids = json_insert(worker_ids, '$[#]', %s) WHERE id IN (%s)", sql)

    def test_claims_come_back_from_the_insert(self) -> None:
        sql, params, returning = self.dialect.insert_claims([1, 2], None, NOW)
        self.assertIs(returning, True)
        self.assertEqual(
            sql,
            'INSERT INTO "robust_queue_claimed_execution" (job_id, process_id, created_at) '
            "VALUES (%s, %s, %s), (%s, %s, %s) RETURNING job_id, id",
        )
        self.assertEqual(params[:3], [1, None, "2026-01-02 03:04:05.678901"])

    def test_a_duplicate_insert_is_ignored(self) -> None:
        self.assertEqual(
            self.dialect.insert_ignoring_duplicates('"t"', "(a) VALUES (%s)"),
            'INSERT OR IGNORE INTO "t" (a) VALUES (%s)',
        )

    def test_a_bounded_lock_wait_changes_nothing(self) -> None:
        """No session setting to change: the body runs, no statement is sent
        (this wrapper's database file cannot be opened)."""
        with self.dialect.lock_wait(1):
            ran = True
        self.assertIs(ran, True)

    def test_a_database_file_is_watched_an_in_memory_one_is_not(self) -> None:
        """A file can be written by other processes: it is watched (the
        listener's test is in tests/integration/processes/test_ready_watch.py);
        an in-memory database is this process's alone."""
        self.assertIs(self.dialect.supports_listen, True)
        self.wrapper.settings_dict["NAME"] = ":memory:"
        self.assertIs(self.dialect.supports_listen, False)

    def test_the_guard_checks_each_candidate_while_tasks_are_paused(self) -> None:
        self.assertEqual(
            self.dialect.task_pause_filter(None),
            'NOT EXISTS (SELECT 1 FROM "robust_queue_job" j JOIN "robust_queue_task_pause" p '
            'ON p.task_path = j.task_path WHERE j.id = "robust_queue_ready_execution".job_id)',
        )
