"""PostgreSQL's statements, built without a database."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from typing import Any
from unittest import mock

from django.db import NotSupportedError
from django.test import SimpleTestCase

from robust_queue.models.sql import NOTIFY_CHANNEL, queue_filter

from .support import NOW, dialect


class PostgreSQLStatementTests(SimpleTestCase):
    def setUp(self) -> None:
        self.dialect, self.wrapper = dialect("postgresql")

    def test_the_claim_is_one_statement_in_claim_order(self) -> None:
        """Lock (skipping locked rows), move and stamp in one statement."""
        sql, params = self.dialect.claim_in_one(3, queue_filter(None, ["a"]), 7, "w-1", NOW)
        self.assertIn(
            'SELECT id FROM "robust_queue_ready_execution" WHERE queue_name NOT IN (%s)\n'
            "    ORDER BY priority DESC, fair_round, job_id LIMIT %s FOR UPDATE SKIP LOCKED",
            sql,
        )
        self.assertIn("jsonb_build_array(%s::text)", sql)
        self.assertTrue(sql.rstrip().endswith("RETURNING job.*, claimed.id AS claim_id"))
        # The stamp is sent once, as the claim row's time.
        self.assertEqual(params, ["a", 3, 7, NOW, "w-1"])
        # A start is never before the job's enqueue, nor 5 s past the stamp.
        start = (
            "GREATEST(claimed.created_at, LEAST(job.enqueued_at, "
            "claimed.created_at + INTERVAL '5 seconds'))"
        )
        self.assertIn(f"started_at = COALESCE(job.started_at, {start})", sql)
        self.assertIn(f"last_attempted_at = {start}", sql)

    def test_a_named_queue_is_claimed_in_the_order_of_its_own_index(self) -> None:
        """One queue is a range of one name ordered by the name first, so
        that only (queue_name, priority DESC, fair_round, job_id) yields it in order."""
        where, params = queue_filter("mail", [])
        queue = (f"{where} AND NOT EXISTS (SELECT 1 FROM p)", params)
        sql, params = self.dialect.claim_in_one(3, queue, 7, "w-1", NOW)
        self.assertIn(
            "WHERE queue_name >= %s AND queue_name <= %s AND NOT EXISTS (SELECT 1 FROM p)\n"
            "    ORDER BY queue_name, priority DESC, fair_round, job_id LIMIT %s FOR UPDATE SKIP LOCKED",
            sql,
        )
        self.assertEqual(params, ["mail", "mail", 3, 7, NOW, "w-1"])

    def test_the_finish_is_fenced_by_the_claims_delete(self) -> None:
        sql, params = self.dialect.finish_in_one(11, NOW, {"a": 1})
        self.assertIn(
            'WITH taken AS (DELETE FROM "robust_queue_claimed_execution" WHERE id = %s', sql
        )
        self.assertEqual(params[:2], [11, NOW])
        self.assertEqual(params[2].obj, {"a": 1})

    def test_finish_and_claim_is_one_statement_gated_on_the_fence(self) -> None:
        """The next claim reads the finish's DELETE: no claim row, no claim."""
        where, params = queue_filter("mail", [])
        later = NOW + dt.timedelta(milliseconds=3)
        sql, params = self.dialect.finish_and_claim_in_one(
            11, NOW, {"v": 1}, (1, (where, params), 7, "w-1"), later
        )
        self.assertIn(
            'WITH done AS (DELETE FROM "robust_queue_claimed_execution" WHERE id = %s', sql
        )
        self.assertIn(
            "WHERE queue_name >= %s AND queue_name <= %s AND EXISTS (SELECT 1 FROM done)\n"
            "    ORDER BY queue_name, priority DESC, fair_round, job_id LIMIT %s FOR UPDATE SKIP LOCKED",
            sql,
        )
        self.assertIn("(SELECT count(*) FROM finished) AS finished", sql)
        self.assertEqual(params[:2], [11, NOW])
        self.assertEqual(params[3:], ["mail", "mail", 1, 7, later, "w-1"])

    def test_a_ready_enqueue_notifies_its_queues(self) -> None:
        """The enqueue statement ends with pg_notify on the ready channel."""
        from robust_queue.models import Job

        job = Job(task_path="t.f", queue_name="q", backend_alias="default", enqueued_at=NOW)
        sql, params = self.dialect.enqueue_ready([job], NOW)
        self.assertTrue(sql.lstrip().startswith('WITH job AS (INSERT INTO "robust_queue_job"'))
        self.assertIn("SELECT pg_notify(%s, name)", sql)
        self.assertEqual(params[-2:], [NOW, NOTIFY_CHANNEL])
        self.assertIn(job.result_id, params)

    def _jobs(self, n: int, **values: Any) -> list[Any]:
        from robust_queue.models import Job

        return [
            Job(
                task_path="t.f",
                queue_name="q",
                backend_alias="default",
                enqueued_at=NOW,
                arguments={"args": [i], "kwargs": {}},
                **values,
            )
            for i in range(n)
        ]

    def test_a_ready_enqueue_sends_its_rows_as_one_json_text(self) -> None:
        """However many jobs, one parameter for all their rows: an array
        per job in column order, JSON columns nested as they are."""
        from robust_queue.models import Job
        from robust_queue.models.sql.statements import ENQUEUE_COLUMNS

        jobs = self._jobs(3, run_after=NOW)
        sql, params = self.dialect.enqueue_ready(jobs, NOW)
        # The columns an enqueue writes: not the fair group, nor the
        # outcome (these jobs have none).
        columns = [f.attname for f in Job._meta.concrete_fields if f.name in ENQUEUE_COLUMNS]
        self.assertNotIn("group_key", sql.split("SELECT", 1)[0])
        self.assertNotIn("return_value", sql.split("SELECT", 1)[0])
        self.assertIn("FROM jsonb_array_elements(%s::jsonb) AS row", sql)
        self.assertIn("(row ->> 0)::varchar, ", sql)
        # A JSON null is SQL NULL in a JSON column, as the ORM stores it.
        self.assertIn("nullif(row -> 5, 'null')", sql)
        self.assertEqual(len(params), 3)
        rows = json.loads(params[0])
        self.assertEqual(len(rows), 3)
        by_column = [dict(zip(columns, row, strict=True)) for row in rows]
        self.assertEqual([row["result_id"] for row in by_column], [j.result_id for j in jobs])
        self.assertEqual([row["arguments"] for row in by_column][1], {"args": [1], "kwargs": {}})
        self.assertEqual(by_column[0]["worker_ids"], [])
        # Datetimes as ISO 8601 with their offset.
        self.assertEqual(by_column[0]["run_after"], NOW.isoformat())
        self.assertEqual(params[1:], [NOW, NOTIFY_CHANNEL])

    def test_a_ready_enqueue_of_values_json_cannot_carry_sends_column_arrays(self) -> None:
        """A naive datetime (the ORM makes it aware, warning) takes one
        array per column (``unnest``); JSON columns as text."""
        jobs = self._jobs(3, run_after=NOW.replace(tzinfo=None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sql, params = self.dialect.enqueue_ready(jobs, NOW)
        self.assertIn("SELECT * FROM unnest((%s)::varchar[], ", sql)
        self.assertEqual(len(params), 15 + 2)
        self.assertIn('{"args": [2], "kwargs": {}}', params[5])

    def test_lock_ready_skips_locked_rows(self) -> None:
        sql, params = self.dialect.lock_ready(2, queue_filter(None, ["a", "b"]))
        self.assertEqual(
            sql,
            'SELECT id, job_id FROM "robust_queue_ready_execution" WHERE queue_name NOT IN '
            "(%s, %s) ORDER BY priority DESC, fair_round, job_id LIMIT %s FOR UPDATE SKIP LOCKED",
        )
        self.assertEqual(params, ["a", "b", 2])

    def test_a_server_without_skip_locked_is_refused(self) -> None:
        features = self.wrapper.features
        with mock.patch.object(type(features), "has_select_for_update_skip_locked", False):
            with self.assertRaisesMessage(NotSupportedError, "does not support"):
                self.dialect.lock_ready(1, queue_filter(None, []))

    def test_statistics_add_on_conflict(self) -> None:
        sql = self.dialect.upsert_adding(
            "robust_queue_statistic", ["minute"], ["finished", "failed"], 2
        )
        self.assertEqual(
            sql,
            'INSERT INTO "robust_queue_statistic" ("minute", "finished", "failed") '
            "VALUES (%s, %s, %s), (%s, %s, %s) "
            'ON CONFLICT ("minute") DO UPDATE SET '
            '"finished" = "robust_queue_statistic"."finished" + excluded."finished", '
            '"failed" = "robust_queue_statistic"."failed" + excluded."failed"',
        )

    def test_a_duplicate_insert_does_nothing(self) -> None:
        self.assertEqual(
            self.dialect.insert_ignoring_duplicates('"t"', "(a) VALUES (%s)"),
            'INSERT INTO "t" (a) VALUES (%s) ON CONFLICT DO NOTHING',
        )

    def test_upserts_name_their_conflict_target(self) -> None:
        self.assertEqual(self.dialect.upsert_target(["key"]), ["key"])

    def test_it_locks_one_table_of_a_join(self) -> None:
        self.assertIs(self.dialect.locks_joined_rows, True)
        self.assertEqual(self.dialect.lock_of, ("self",))

    def test_it_listens_and_bounds_lock_waits_in_seconds(self) -> None:
        self.assertIs(self.dialect.supports_listen, True)
        self.assertEqual(self.dialect._lock_wait_value(3), "3s")

    def test_it_has_no_numeric_error_codes(self) -> None:
        self.assertIsNone(self.dialect.error_code(Exception(1153, "packet")))
