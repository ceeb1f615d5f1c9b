"""Plain SQL for the transitions every job goes through: enqueue, claim, finish.

They run once per job, so they skip the ORM's query building. On PostgreSQL
each is one statement in autocommit, chained with data-modifying CTEs, and
the database still does all of it atomically: rows are locked, moved and
stamped together, or not at all. Elsewhere each is a short transaction of a
few statements. The owning models run them (``ReadyExecution.objects.claim``,
``ClaimedExecution.finish``); this module only builds statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import NotSupportedError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.sql import InsertQuery

Statement = tuple[str, list[Any]]

NOTIFY_CHANNEL = "robust_queue_ready"

_PG_CLAIM = """
WITH picked AS MATERIALIZED (
    SELECT id FROM {ready} WHERE {where}
    ORDER BY priority DESC, job_id LIMIT %s FOR UPDATE SKIP LOCKED
), taken AS (
    DELETE FROM {ready} AS ready USING picked WHERE ready.id = picked.id
    RETURNING ready.job_id
), claimed AS (
    INSERT INTO {claimed} (job_id, process_id, created_at)
    SELECT job_id, %s, %s FROM taken RETURNING id, job_id
)
UPDATE {job} AS job
SET started_at = COALESCE(job.started_at, %s), last_attempted_at = %s,
    worker_ids = job.worker_ids || jsonb_build_array(%s::text)
FROM claimed WHERE job.id = claimed.job_id
RETURNING job.*, claimed.id AS claim_id
"""

# The DELETE is the fence: after a concurrent prune it deletes nothing and
# the UPDATE matches no job.
_PG_FINISH = """
WITH taken AS (DELETE FROM {claimed} WHERE id = %s RETURNING job_id)
UPDATE {job} AS job SET finished_at = %s, return_value = %s
FROM taken WHERE job.id = taken.job_id
"""

# One enqueue of jobs that are due and unlimited: insert them, make them
# ready and wake idle listeners. The parts see one snapshot, so the ready
# rows come from the job INSERT's RETURNING, not from the table.
# Data-modifying CTEs always run; "notified" runs because the final SELECT
# reads it.
_PG_ENQUEUE = """
WITH job AS ({insert} RETURNING id, result_id, queue_name, priority),
ready AS (
    INSERT INTO {ready} (job_id, queue_name, priority, created_at)
    SELECT id, queue_name, priority, %s FROM job
    RETURNING queue_name
), notified AS (
    SELECT pg_notify(%s, name) FROM (SELECT DISTINCT queue_name AS name FROM ready) AS queues
)
SELECT result_id, id FROM job WHERE (SELECT count(*) FROM notified) >= 0
"""

# worker_ids with one string appended, where there is no jsonb.
_APPEND = {
    "sqlite": "json_insert(worker_ids, '$[#]', %s)",
    "mysql": "JSON_ARRAY_APPEND(worker_ids, '$', %s)",
}


class Statements:
    """The enqueue, claim and finish statements for one database connection."""

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection
        self.is_postgresql = connection.vendor == "postgresql"

    def claim_in_one(
        self, limit: int, queue: Statement, process_id: int | None, worker_id: str, now: datetime
    ) -> Statement:
        """PostgreSQL: lock, move and stamp up to ``limit`` ready jobs."""
        where, params = queue
        sql = _PG_CLAIM.format(
            ready=self._table("ready"), claimed=self._table("claimed"),
            job=self._table("job"), where=where,
        )
        return sql, [*params, limit, process_id, now, now, now, worker_id]

    def finish_in_one(self, claim_id: int, now: datetime, return_value: Any) -> Statement:
        """PostgreSQL: delete the claim and record success on its job."""
        sql = _PG_FINISH.format(claimed=self._table("claimed"), job=self._table("job"))
        return sql, [claim_id, now, self._json(return_value)]

    def enqueue_ready(self, jobs: Sequence[Model], now: datetime) -> Statement:
        """PostgreSQL: insert ``jobs``, make them ready, notify; returns
        (result id, job id) rows."""
        job = apps.get_model("robust_queue", "Job")
        query = InsertQuery(job)
        query.insert_values([f for f in job._meta.concrete_fields if not f.primary_key], list(jobs))
        [(insert, params)] = query.get_compiler(connection=self.connection).as_sql()
        sql = _PG_ENQUEUE.format(insert=insert, ready=self._table("ready"))
        return sql, [*params, now, NOTIFY_CHANNEL]

    def lock_ready(self, limit: int, queue: Statement) -> Statement:
        """(ready id, job id) of up to ``limit`` ready jobs, in claim order.

        SQLite has no row locks: the caller's IMMEDIATE transaction is one.
        """
        where, params = queue
        features = self.connection.features
        if features.has_select_for_update and not features.has_select_for_update_skip_locked:
            raise NotSupportedError(
                "Robust Queue claims with SELECT ... FOR UPDATE SKIP LOCKED, which "
                f"this {self.connection.display_name} server does not support "
                "(MariaDB >= 10.6, MySQL >= 8.0.1, PostgreSQL >= 9.5 do)."
            )
        lock = " FOR UPDATE SKIP LOCKED" if features.has_select_for_update else ""
        sql = (
            f"SELECT id, job_id FROM {self._table('ready')} WHERE {where} "
            f"ORDER BY priority DESC, job_id LIMIT %s{lock}"
        )
        return sql, [*params, limit]

    def insert_claims(
        self, job_ids: Sequence[int], process_id: int | None, now: datetime
    ) -> tuple[str, list[Any], bool]:
        """One INSERT of the claims; True if it returns (job id, claim id)."""
        returning = self.connection.features.can_return_rows_from_bulk_insert
        values = ", ".join(["(%s, %s, %s)"] * len(job_ids))
        sql = f"INSERT INTO {self._table('claimed')} (job_id, process_id, created_at) VALUES {values}"
        if returning:
            sql += " RETURNING job_id, id"
        created = self._datetime(now)
        params = [value for job_id in job_ids for value in (job_id, process_id, created)]
        return sql, params, returning

    def claim_ids(self, job_ids: Sequence[int]) -> Statement:
        """(job id, claim id) of claims, where the INSERT returned none (MySQL)."""
        return (
            f"SELECT job_id, id FROM {self._table('claimed')} WHERE job_id IN ({_marks(job_ids)})",
            list(job_ids),
        )

    def stamp_jobs(self, job_ids: Sequence[int], worker_id: str, now: datetime) -> Statement:
        """Record a claim on its jobs: attempts == len(worker_ids)."""
        append = _APPEND[self.connection.vendor]
        stamp = self._datetime(now)
        sql = (
            f"UPDATE {self._table('job')} SET started_at = COALESCE(started_at, %s), "
            f"last_attempted_at = %s, worker_ids = {append} WHERE id IN ({_marks(job_ids)})"
        )
        return sql, [stamp, stamp, worker_id, *job_ids]

    def select_jobs(self, job_ids: Sequence[int]) -> Statement:
        return f"SELECT * FROM {self._table('job')} WHERE id IN ({_marks(job_ids)})", list(job_ids)

    def delete_claim(self, claim_id: int) -> Statement:
        return f"DELETE FROM {self._table('claimed')} WHERE id = %s", [claim_id]

    def finish_job(self, job_id: int, now: datetime, return_value: Any) -> Statement:
        sql = f"UPDATE {self._table('job')} SET finished_at = %s, return_value = %s WHERE id = %s"
        return sql, [self._datetime(now), self._json(return_value), job_id]

    def _table(self, name: str) -> str:
        model = apps.get_model("robust_queue", _MODELS[name])
        return self.connection.ops.quote_name(model._meta.db_table)

    def _datetime(self, value: datetime) -> Any:
        return self.connection.ops.adapt_datetimefield_value(value)

    def _json(self, value: Any) -> Any:
        field = apps.get_model("robust_queue", "Job")._meta.get_field("return_value")
        return field.get_db_prep_save(value, self.connection)


# Looked up in the app registry: the models import this module.
_MODELS = {"ready": "ReadyExecution", "claimed": "ClaimedExecution", "job": "Job"}


def queue_filter(queue_name: str | None, excluded: Sequence[str]) -> Statement:
    """The claim's WHERE clause: one queue, or every queue but ``excluded``."""
    if queue_name is not None:
        return "queue_name = %s", [queue_name]
    if excluded:
        return f"queue_name NOT IN ({_marks(excluded)})", list(excluded)
    return "1 = 1", []


def _marks(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))
