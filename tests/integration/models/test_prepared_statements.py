"""PostgreSQL: the hot statements are prepared once per session
(models/sql/prepared.py), and a prepared statement never fails a claim
after a migration or a session reset."""

from __future__ import annotations

from unittest import skipUnless

from django.db import connection, connections
from django.test import TransactionTestCase, override_settings
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.models import ClaimedExecution, ReadyExecution
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import run_in_threads

HOT = {
    "enqueue": "WITH job AS (INSERT INTO",
    "claim": "WITH picked AS MATERIALIZED",
    "finish": "WITH taken AS (DELETE FROM",
    "finish and claim": "WITH done AS (DELETE FROM",
}


def _prepared() -> list[str]:
    """This session's prepared statements (their text, trimmed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [" ".join(row[0].split()) for row in cursor.fetchall()]


def _claim(n: int = 1) -> list[ClaimedExecution]:
    return ReadyExecution.objects.claim(
        n, process_id=None, worker_id="w-1", queue_name=None, paused_tasks=()
    )


@skipUnless(connection.vendor == "postgresql", "PostgreSQL's prepared statements")
class PreparedStatementTests(TransactionTestCase):
    def test_the_hot_statements_are_prepared_once_per_session(self) -> None:
        tasks.add.enqueue(1, 2)
        robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(4)])
        [claimed] = _claim()
        perform(claimed)  # a finish
        from robust_queue.models import NextClaim

        [claimed] = _claim()
        perform(claimed, then=lambda: NextClaim(None, (), (), None, "w-1"))
        prepared = _prepared()
        for what, start in HOT.items():
            with self.subTest(what):
                self.assertTrue(any(text.startswith(start) for text in prepared), prepared)
        # Each once, however often it ran.
        before = len(prepared)
        for _ in range(3):
            for claimed in _claim():
                perform(claimed)
        self.assertEqual(len(_prepared()), before)

    def test_a_connection_that_logs_its_queries_prepares_nothing(self) -> None:
        """The log shows each statement with its values, not $1."""
        with CaptureQueriesContext(connection) as queries:
            tasks.add.enqueue(7, 8)
            [claimed] = _claim()
            perform(claimed)
        self.assertEqual(_prepared(), [])
        logged = " ".join(q["sql"] for q in queries)
        self.assertNotIn("$1", logged)
        self.assertIn("'w-1'", logged)

    @override_settings(ROBUST_QUEUE={"pooled_databases": ["default"]})
    def test_a_pooled_database_gets_no_prepared_statement(self) -> None:
        """Behind a pooler in transaction mode the next transaction may
        land on a session that never saw it."""
        tasks.add.enqueue(7, 8)
        robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(3)])
        for claimed in _claim(4):
            perform(claimed)
        self.assertEqual(_prepared(), [])

    def test_a_claim_prepared_before_a_migration_runs_after_it(self) -> None:
        """A column added to the job table (a rolling deploy's migration)
        changes the rows a prepared claim returns: the server refuses it,
        and the claim is prepared anew instead of failing."""
        robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(4)])
        for claimed in _claim():
            perform(claimed)
        self.addCleanup(self._drop_column)
        run_in_threads([self._add_column])
        claimed = _claim()
        self.assertEqual(len(claimed), 1)
        perform(claimed[0])
        self.assertEqual(claimed[0].job.args, [1, 2])

    def test_statements_dropped_behind_psycopgs_back_are_prepared_anew(self) -> None:
        """psycopg forgets its names on DISCARD ALL or DEALLOCATE ALL, not
        when other code deallocates a statement by name."""
        robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(4)])
        for claimed in _claim():
            perform(claimed)
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM pg_prepared_statements")
            for (name,) in cursor.fetchall():
                cursor.execute(f'DEALLOCATE "{name}"')
        self.assertEqual(_prepared(), [])
        claimed = _claim()
        self.assertEqual(len(claimed), 1)
        perform(claimed[0])
        self.assertTrue(_prepared())

    @staticmethod
    def _add_column() -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("ALTER TABLE robust_queue_job ADD COLUMN rq_test_extra integer")

    @staticmethod
    def _drop_column() -> None:
        connection.close()  # its prepared statements go with the session
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE robust_queue_job DROP COLUMN IF EXISTS rq_test_extra")
