"""Enqueue of due, plain jobs in plain SQL: few round trips, all or nothing.

TransactionTestCase: outside an atomic block is where MySQL/MariaDB sends
its own START TRANSACTION and COMMIT (the dialect's ``transaction()``), the
path a single ``enqueue()`` in autocommit mode takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from unittest import mock, skipIf, skipUnless

from django.db import DatabaseError, connection, transaction
from django.test import TransactionTestCase
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.models import Job, ReadyExecution
from robust_queue.models.sql import dialect_for
from testproject import tasks
from tests.helpers import claim, run_in_threads


def _session_status(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE %s", [name])
        return int(cursor.fetchone()[1])


def _jobs_seen_elsewhere() -> int:
    """Jobs committed, counted on another connection."""
    [count] = run_in_threads([lambda: Job.objects.count()])
    assert isinstance(count, int)
    return count


def _inserts(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]


BROKEN = [("INSERT INTO robust_queue_no_such_table (x) VALUES (1)", [])]


@contextmanager
def ready_insert_broken() -> Iterator[None]:
    """Every way this connection's dialect makes ready rows fails, after
    the jobs' INSERT (MySQL/MariaDB: a single job's goes in the same text)."""
    kind = type(dialect_for("default"))
    names = [
        name for name in ("insert_ready_rows", "ready_rows_of_last_insert") if hasattr(kind, name)
    ]
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(mock.patch.object(kind, name, return_value=BROKEN))
        yield


class PlainEnqueueTests(TransactionTestCase):
    @skipIf(connection.vendor == "postgresql", "PostgreSQL enqueues in one statement")
    def test_a_single_enqueue_is_two_inserts_in_one_transaction(self) -> None:
        with CaptureQueriesContext(connection) as queries:
            result = tasks.add.enqueue(1, 2)
        sent = [s.split(" ")[0].upper() for q in queries for s in q["sql"].split("; ")]
        # The dialect's own transaction around exactly the two INSERTs
        # (MariaDB: START TRANSACTION, not SET autocommit; the session
        # counters below show what the driver sends besides), on MySQL and
        # MariaDB as one text: one round trip.
        begin = "START" if connection.vendor == "mysql" else "BEGIN"
        self.assertEqual(sent, [begin, "INSERT", "INSERT", "COMMIT"])
        self.assertEqual(len(queries), 1 if connection.vendor == "mysql" else 4)
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(ReadyExecution.objects.get().job_id, job.pk)
        self.assertEqual(_jobs_seen_elsewhere(), 1)
        self.assertIs(connection.get_autocommit(), True)

    @skipUnless(connection.vendor == "mysql", "MySQL/MariaDB's round trips")
    def test_an_enqueue_does_not_switch_autocommit_on_mysql(self) -> None:
        """One START TRANSACTION and COMMIT; no SET autocommit, no savepoint."""
        names = ("Com_set_option", "Com_begin", "Com_commit", "Com_savepoint", "Com_insert")
        before = {name: _session_status(name) for name in names}
        tasks.add.enqueue(1, 2)
        after = {name: _session_status(name) for name in names}
        self.assertEqual(
            {name: after[name] - before[name] for name in names},
            {
                "Com_set_option": 0,
                "Com_begin": 1,
                "Com_commit": 1,
                "Com_savepoint": 0,
                "Com_insert": 2,
            },
        )

    @skipUnless(connection.vendor == "mysql", "MySQL/MariaDB's round trips")
    def test_an_enqueue_inside_a_callers_transaction_is_one_round_trip_on_mysql(self) -> None:
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            results = [tasks.add.enqueue(i, 2) for i in range(3)]
        self.assertEqual(len(queries), 3)
        for query in queries:
            sent = [s.split(" ")[0].upper() for s in query["sql"].split("; ")]
            self.assertEqual(sent, ["INSERT", "INSERT"])
        # Each ready row holds its own job's id (LAST_INSERT_ID()).
        jobs = Job.objects.in_bulk([r.id for r in results], field_name="result_id")
        ready = set(ReadyExecution.objects.values_list("job_id", flat=True))
        self.assertEqual(ready, {jobs[r.id].pk for r in results})

    def test_the_row_written_is_the_row_read_back(self) -> None:
        """Values go in adapted as the ORM adapts them: the job reads back equal."""
        when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
        args = ["é ü 日本", {"nested": [1, 2.5, None, True]}, "x" * 500]
        with mock.patch("robust_queue.backend.timezone.now", return_value=when):
            result = tasks.echo.using(priority=-7, queue_name="reports").enqueue(*args)
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.args, args)
        self.assertEqual(job.enqueued_at, when)
        self.assertEqual((job.priority, job.queue_name), (-7, "reports"))
        ready = ReadyExecution.objects.get(job=job)
        self.assertEqual((ready.priority, ready.queue_name), (-7, "reports"))
        self.assertEqual(job.return_value, None)
        self.assertIsNone(job.finished_at)

    def test_many_jobs_take_as_many_statements_as_the_database_needs(self) -> None:
        """More jobs than one INSERT may carry (SQLite's parameter limit, a
        bounded statement elsewhere) are all written, each with its own id."""
        results = robust_queue.enqueue_all([(tasks.add, (i, 0), {}) for i in range(2500)])
        jobs = Job.objects.in_bulk([r.id for r in results], field_name="result_id")
        self.assertEqual([jobs[r.id].args for r in results], [[i, 0] for i in range(2500)])
        ready = dict(ReadyExecution.objects.values_list("job_id", "queue_name"))
        self.assertEqual(sorted(ready), sorted(job.pk for job in jobs.values()))
        self.assertEqual(len(claim(2500)), 2500)

    @skipIf(connection.vendor == "postgresql", "PostgreSQL enqueues in one statement")
    def test_an_enqueue_that_fails_part_way_writes_nothing(self) -> None:
        """The ready INSERT fails after the jobs were inserted: all undone,
        and no transaction is left open."""
        with ready_insert_broken():
            with self.assertRaises(DatabaseError):
                tasks.add.enqueue(1, 2)
            with self.assertRaises(DatabaseError):
                robust_queue.enqueue_all([(tasks.add, (i, 0), {}) for i in range(3)])
        self.assertEqual(Job.objects.count(), 0)
        self.assertIs(connection.get_autocommit(), True)
        tasks.add.enqueue(3, 4)
        self.assertEqual(_jobs_seen_elsewhere(), 1)

    def test_an_enqueue_inside_a_callers_transaction_goes_with_it(self) -> None:
        with self.assertRaisesMessage(RuntimeError, "caller gives up"):
            with transaction.atomic():
                tasks.add.enqueue(1, 2)
                self.assertEqual(Job.objects.count(), 1)
                raise RuntimeError("caller gives up")
        self.assertEqual(Job.objects.count(), 0)
        self.assertFalse(ReadyExecution.objects.exists())

    @skipIf(connection.vendor == "postgresql", "PostgreSQL enqueues in one statement")
    def test_a_failure_inside_a_callers_transaction_dooms_it(self) -> None:
        """No savepoint: the caller's transaction cannot go on half-written."""
        with transaction.atomic():
            tasks.add.enqueue(1, 2)
            with ready_insert_broken(), self.assertRaises(DatabaseError):
                tasks.add.enqueue(3, 4)
            self.assertIs(connection.needs_rollback, True)
        self.assertEqual(Job.objects.count(), 0)

    @skipIf(connection.vendor == "postgresql", "PostgreSQL enqueues in one statement")
    def test_a_server_that_returns_no_ids_takes_the_orm_path(self) -> None:
        """MySQL (not MariaDB) cannot RETURNING: the jobs are still written."""
        with (
            mock.patch.object(type(connection.features), "can_return_rows_from_bulk_insert", False),
            CaptureQueriesContext(connection) as queries,
        ):
            results = robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(3)])
            single = tasks.add.enqueue(9, 9)
        # The plain path's INSERT returns (id, result_id); the ORM's does not.
        self.assertFalse([sql for sql in _inserts(queries) if "RETURNING id, result_id" in sql])
        self.assertEqual(len(_inserts(queries)), 4)
        jobs = Job.objects.in_bulk([r.id for r in [*results, single]], field_name="result_id")
        self.assertEqual([jobs[r.id].args for r in results], [[0, 1], [1, 1], [2, 1]])
        self.assertEqual(ReadyExecution.objects.count(), 4)
