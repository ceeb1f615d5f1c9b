"""The claim's and the finish's transaction: all or nothing, few round trips.

TransactionTestCase: outside an atomic block is where MySQL/MariaDB sends
its own START TRANSACTION and COMMIT (the dialect's ``transaction()``), so
that is what these tests run.
"""

from __future__ import annotations

from unittest import mock, skipIf, skipUnless

from django.db import DatabaseError, connection, connections, transaction
from django.test import TransactionTestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.models import ClaimedExecution, Job, Pause, ReadyExecution
from robust_queue.models.sql import Dialect, dialect_for
from robust_queue.models.statistics import recorder
from testproject import tasks
from tests.helpers import claim, run_in_threads

PAUSE_TABLE = Pause._meta.db_table


def _insert_pause(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {connection.ops.quote_name(PAUSE_TABLE)} (queue_name, created_at) "
            "VALUES (%s, %s)",
            [name, connection.ops.adapt_datetimefield_value(timezone.now())],
        )


def _paused_seen_elsewhere() -> list[str]:
    """The paused queues, read on another connection (only committed rows)."""
    [names] = run_in_threads([lambda: sorted(Pause.objects.values_list("queue_name", flat=True))])
    assert isinstance(names, list)
    return names


def _session_status(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE %s", [name])
        return int(cursor.fetchone()[1])


class ShortTransactionTests(TransactionTestCase):
    def test_the_body_commits_as_one_transaction(self) -> None:
        """Rows written in the body are visible to others once it ends."""
        with dialect_for("default").transaction():
            _insert_pause("one")
            _insert_pause("two")
        self.assertEqual(_paused_seen_elsewhere(), ["one", "two"])
        self.assertIs(connection.get_autocommit(), True)

    def test_an_error_in_the_body_writes_nothing_and_leaves_no_transaction(self) -> None:
        """A failed body is rolled back; the next write commits on its own."""
        with self.assertRaisesMessage(ValueError, "boom"):
            with dialect_for("default").transaction():
                _insert_pause("lost")
                raise ValueError("boom")
        self.assertEqual(_paused_seen_elsewhere(), [])
        # Were a transaction still open, this autocommit write would not be
        # visible to another connection.
        _insert_pause("after")
        self.assertEqual(_paused_seen_elsewhere(), ["after"])

    def test_inside_an_atomic_block_it_joins_the_callers_transaction(self) -> None:
        """A claim made in a caller's transaction is undone by its rollback."""
        tasks.add.enqueue(1, 1)
        with self.assertRaisesMessage(RuntimeError, "caller gives up"):
            with transaction.atomic():
                self.assertEqual(len(claim(1)), 1)
                raise RuntimeError("caller gives up")
        self.assertEqual(ReadyExecution.objects.count(), 1)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertEqual(Job.objects.get().worker_ids, [])

    def test_outside_autocommit_it_leaves_the_sessions_pending_work_alone(self) -> None:
        """With autocommit off, a claim neither commits nor ends what is pending."""
        tasks.add.enqueue(1, 1)
        connection.set_autocommit(False)
        try:
            _insert_pause("pending")
            # Of "default": a claim of every queue stops at a pause it did
            # not know of (the pending one is this session's own).
            self.assertEqual(len(claim(1, queue_name="default")), 1)
            connection.rollback()
        finally:
            connection.set_autocommit(True)
        self.assertEqual(_paused_seen_elsewhere(), [])
        self.assertEqual(ReadyExecution.objects.count(), 1)

    @skipIf(connection.vendor == "postgresql", "PostgreSQL claims in one statement")
    def test_a_claim_that_fails_part_way_writes_nothing(self) -> None:
        """The job stamp fails after the claim row was inserted: all undone."""
        tasks.add.enqueue(1, 1)
        broken = ("UPDATE robust_queue_no_such_table SET x = 1", [])
        with mock.patch.object(Dialect, "stamp_jobs", return_value=broken):
            with self.assertRaises(DatabaseError):
                claim(1)
        self.assertEqual(ReadyExecution.objects.count(), 1)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertEqual(Job.objects.get().worker_ids, [])
        [claimed] = claim(1)
        self.assertIs(claimed.finish(2), True)
        self.assertEqual(Job.objects.get().return_value, 2)

    @skipUnless(connection.vendor == "mysql", "MySQL/MariaDB's round trips")
    def test_claim_and_finish_do_not_switch_autocommit_on_mysql(self) -> None:
        """No SET autocommit: one START TRANSACTION and COMMIT each, the
        claim in two round trips and the finish in one."""
        tasks.add.enqueue(1, 1)
        # As in a worker: statistics wait in memory for the next flush.
        recorder.start_buffering()
        self.addCleanup(recorder.stop_buffering)
        before = {
            name: _session_status(name) for name in ("Com_set_option", "Com_begin", "Com_commit")
        }
        with CaptureQueriesContext(connection) as queries:
            [claimed] = claim(1)
            self.assertEqual(len(queries), 2)
            self.assertIs(claimed.finish(3), True)
            self.assertEqual(len(queries), 3)
        after = {name: _session_status(name) for name in before}
        # The one SET is the finish's note of whether its DELETE took the claim.
        self.assertEqual(
            {name: after[name] - before[name] for name in before},
            {"Com_set_option": 1, "Com_begin": 2, "Com_commit": 2},
        )
        self.assertFalse([q for q in queries if "autocommit" in q["sql"].lower()])
        self.assertEqual(Job.objects.get().return_value, 3)

    @skipUnless(connection.vendor == "mysql", "mysqlclient's multi_statements option")
    def test_without_multi_statements_every_statement_goes_alone(self) -> None:
        """OPTIONS {"multi_statements": False}: the server refuses a text of
        several statements, so enqueue, claim and finish send one each."""
        options = {**connection.settings_dict["OPTIONS"], "multi_statements": False}
        connection.close()
        self.addCleanup(connection.close)
        with mock.patch.dict(connection.settings_dict, {"OPTIONS": options}):
            with CaptureQueriesContext(connection) as queries:
                result = tasks.add.enqueue(1, 1)
                [claimed] = claim(1)
                self.assertIs(claimed.finish(3), True)
        self.assertFalse([q for q in queries if ";" in q["sql"]])
        self.assertEqual(tasks.add.get_result(result.id).return_value, 3)

    @skipUnless(connection.vendor == "mysql", "KILL CONNECTION is MySQL/MariaDB's")
    def test_a_session_that_cannot_roll_back_is_closed(self) -> None:
        """If ROLLBACK fails, the connection is dropped (the server rolls back)."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT CONNECTION_ID()")
            [session] = cursor.fetchone()

        def kill() -> None:
            with connections["default"].cursor() as cursor:
                cursor.execute("KILL CONNECTION %s", [session])

        with (
            self.assertLogs("robust_queue.models.sql.mysql", "WARNING") as logs,
            self.assertRaisesMessage(ValueError, "body failed"),
        ):
            with dialect_for("default").transaction():
                _insert_pause("lost")
                run_in_threads([kill])
                raise ValueError("body failed")
        # One line per event, no traceback: the lost session is the cause.
        [record] = logs.records
        self.assertIsNone(record.exc_info)
        self.assertRegex(
            record.getMessage(),
            r"^ROLLBACK failed \(OperationalError: .+\); closing the connection$",
        )
        self.assertNotIn("\n", record.getMessage())
        self.assertIsNone(connection.connection)
        self.assertEqual(_paused_seen_elsewhere(), [])
        _insert_pause("after")
        self.assertEqual(_paused_seen_elsewhere(), ["after"])
