"""The two hottest transitions as one statement each, on PostgreSQL.

Claiming a job and finishing it run once per job. Elsewhere each is a
transaction of several statements; PostgreSQL chains them in data-modifying
CTEs, so each is one round trip in autocommit and the database still does
all of it atomically: rows are locked, moved and stamped together, or not at
all. The owning models run these (``ReadyExecution.objects.claim``,
``ClaimedExecution.finish``); this module only holds the SQL.
"""

from __future__ import annotations

from typing import Any

from django.db import connections

CLAIM = """
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

# The DELETE is the fence: a concurrent prune deletes nothing and the
# UPDATE then matches no job.
FINISH = """
WITH taken AS (DELETE FROM {claimed} WHERE id = %s RETURNING job_id)
UPDATE {job} AS job SET finished_at = %s, return_value = %s
FROM taken WHERE job.id = taken.job_id
"""


def queue_filter(queue_name: str | None, excluded: list[str]) -> tuple[str, list[Any]]:
    """The claim's WHERE clause for one queue, or all but ``excluded``."""
    if queue_name is not None:
        return "queue_name = %s", [queue_name]
    if excluded:
        return "NOT (queue_name = ANY(%s))", [excluded]
    return "TRUE", []


def table(using: str, model: type[Any]) -> str:
    return connections[using].ops.quote_name(model._meta.db_table)


def is_postgresql(using: str) -> bool:
    return connections[using].vendor == "postgresql"
