"""Many jobs in one enqueue_all read back exactly as a single enqueue
writes them (on PostgreSQL they travel as one JSON text, models/sql/
postgresql.py ``_json_rows``), and a value JSON cannot carry as stored
takes the column arrays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from unittest import mock, skipUnless

from django.db import DatabaseError, connection
from django.test import TransactionTestCase
from django.test.utils import CaptureQueriesContext
from django.utils.translation import gettext_lazy

import robust_queue
from robust_queue.arguments import decode_arguments
from robust_queue.models import Job, ReadyExecution
from robust_queue.models.sql import dialect_for
from robust_queue.models.sql.statements import ENQUEUE_COLUMNS
from testproject import tasks

WHEN = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
AWKWARD: list[Any] = [
    'quotes " and \\ backslashes \\" {} [] ,',
    "é ü 日本 \U0001f600 \u2028 \t\n",
    2**53 + 1,
    -(2**62),
    1.5e-7,
    {"nested": [1, 2.5, None, True, {"": "empty key"}], "null": None},
    [],
    "",
    "x" * 3000,
]


def _row(job: Job) -> dict[str, Any]:
    return {name: getattr(job, name) for name in sorted(ENQUEUE_COLUMNS - {"result_id"})}


class BulkRowsTests(TransactionTestCase):
    def _enqueue_both_ways(self) -> tuple[list[Job], list[Job]]:
        calls = [
            (tasks.echo.using(priority=p, queue_name=q, run_after=after), (arg,), {"k": arg})
            for p, q, after, arg in [
                (-7, "reports", None, AWKWARD[0]),
                (0, "default", WHEN.astimezone(timezone(timedelta(hours=5))), AWKWARD[1]),
                (100, "default", None, AWKWARD[2]),
                *((i % 5, "default", None, value) for i, value in enumerate(AWKWARD[3:])),
            ]
        ]
        with mock.patch("robust_queue.backend.timezone.now", return_value=WHEN):
            bulk = robust_queue.enqueue_all(calls)
            single = [task.enqueue(*args, **kwargs) for task, args, kwargs in calls]
        jobs = Job.objects.in_bulk([r.id for r in bulk + single], field_name="result_id")
        return [jobs[r.id] for r in bulk], [jobs[r.id] for r in single]

    def test_bulk_rows_read_back_as_single_enqueues_write_them(self) -> None:
        bulk, single = self._enqueue_both_ways()
        self.assertEqual([_row(job) for job in bulk], [_row(job) for job in single])
        decoded = [decode_arguments(job.arguments, using="default") for job in bulk]
        self.assertEqual(decoded, [([value], {"k": value}) for value in AWKWARD])
        self.assertEqual(bulk[1].run_after, WHEN)
        # In call order: FIFO within the call.
        self.assertEqual([job.pk for job in bulk], sorted(job.pk for job in bulk))
        ready = set(ReadyExecution.objects.values_list("job_id", flat=True))
        # run_after is past: every job is due.
        self.assertEqual(ready, {job.pk for job in bulk + single})

    @skipUnless(connection.vendor == "postgresql", "PostgreSQL's JSON rows")
    def test_many_jobs_are_one_json_text_on_postgresql(self) -> None:
        with CaptureQueriesContext(connection) as queries:
            robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(50)])
        inserts = [q["sql"] for q in queries if "INSERT" in q["sql"]]
        self.assertEqual(len(inserts), 1)
        self.assertIn("jsonb_array_elements", inserts[0])
        first = Job.objects.order_by("pk").first()
        self.assertEqual(first.args if first else None, [0, 1])

    @skipUnless(connection.vendor == "postgresql", "PostgreSQL's JSON rows")
    def test_a_value_json_cannot_carry_takes_the_column_arrays(self) -> None:
        """A lazy string is text to the ORM, not to JSON: the jobs go in
        by the column arrays, and read back the same."""
        jobs = [
            Job(
                task_path=gettext_lazy("testproject.tasks.add")
                if i == 0
                else "testproject.tasks.add",
                queue_name="default",
                backend_alias="default",
                arguments={"args": [i, 1], "kwargs": {}},
                enqueued_at=WHEN,
            )
            for i in range(3)
        ]
        dialect = dialect_for("default")
        self.assertIsNone(dialect._json_rows(jobs))
        self.assertIsNotNone(dialect._json_rows(jobs[1:]))
        with CaptureQueriesContext(connection) as queries:
            Job.objects.enqueue_all(jobs)
        self.assertIn("unnest", "".join(q["sql"] for q in queries))
        stored = Job.objects.order_by("pk")
        self.assertEqual([job.task_path for job in stored], ["testproject.tasks.add"] * 3)
        self.assertEqual([job.args for job in stored], [[i, 1] for i in range(3)])

    def test_a_value_the_database_refuses_writes_no_job(self) -> None:
        """Text no column can hold (NUL) in one job of many: a database error,
        and none of the call's jobs is written."""
        calls = [(tasks.echo, (f"job {i}",), {}) for i in range(5)]
        calls[3] = (tasks.echo, ("nul \x00 inside",), {})
        if connection.vendor == "postgresql":
            with self.assertRaises(DatabaseError):
                robust_queue.enqueue_all(calls)
            self.assertFalse(Job.objects.exists())
            self.assertFalse(ReadyExecution.objects.exists())
        else:
            # MySQL/MariaDB and SQLite store it: read back whole.
            results = robust_queue.enqueue_all(calls)
            job = Job.objects.get(result_id=results[3].id)
            self.assertEqual(job.args, ["nul \x00 inside"])
