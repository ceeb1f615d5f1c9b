"""Fill a PostgreSQL queue with a production-sized history, fast.

1,000,000 finished and 50,000 failed jobs spread over the last week, plus
live ready and scheduled jobs, written with ``INSERT ... SELECT
generate_series`` (a minute, not an hour of ORM inserts).
"""

from __future__ import annotations

from django.db import connection

TRACEBACK = (
    "Traceback (most recent call last):\\n"
    + '  File \\"/srv/app/billing/tasks.py\\", line 42, in charge\\n    gateway.charge(invoice)\\n'
    * 12
)
EXCEPTIONS = [
    "billing.gateway.TimeoutError",
    "builtins.ValueError",
    "django.db.utils.OperationalError",
    "robust_queue.exceptions.ProcessPrunedError",
]
TASKS = ["add", "report", "echo", "record"]
QUEUES = ["default", "reports", "emails"]

JOBS_SQL = """
INSERT INTO robust_queue_job (
    result_id, task_path, queue_name, priority, backend_alias, arguments,
    concurrency_key, enqueued_at, started_at, last_attempted_at, finished_at,
    worker_ids, errors, return_value)
SELECT
    md5(%(tag)s || i::text) || substr(md5(i::text), 1, 11),
    'testproject.tasks.' || (%(tasks)s::text[])[1 + i %% 4],
    (%(queues)s::text[])[1 + i %% 3],
    0, 'default', '{"args": [1, 2], "kwargs": {}}'::jsonb, '',
    at, at, at,
    CASE WHEN %(mode)s = 'finished' THEN at + interval '1 second' END,
    CASE WHEN %(mode)s = 'ready' THEN '[]'::jsonb ELSE '["bench-host:1:worker-1"]'::jsonb END,
    CASE WHEN %(mode)s = 'failed' THEN jsonb_build_array(jsonb_build_object(
        'exception_class_path', (%(exceptions)s::text[])[1 + i %% 4],
        'traceback', %(traceback)s || (%(exceptions)s::text[])[1 + i %% 4] || ': failed'))
        ELSE '[]'::jsonb END,
    CASE WHEN %(mode)s = 'finished' THEN '3'::jsonb END
FROM (
    SELECT i, now() - (i * %(spacing)s * interval '1 millisecond') AS at
    FROM generate_series(1, %(count)s) AS i
) AS series
"""


def seed(finished: int = 1_000_000, failed: int = 50_000, ready: int = 5_000) -> None:
    week_ms = 7 * 24 * 3600 * 1000
    with connection.cursor() as cursor:
        _jobs(cursor, "finished", finished, week_ms // finished)
        _jobs(cursor, "failed", failed, week_ms // failed)
        cursor.execute(
            "INSERT INTO robust_queue_failed_execution (job_id, error, created_at) "
            "SELECT id, errors -> 0, last_attempted_at + interval '1 second' "
            "FROM robust_queue_job WHERE finished_at IS NULL"
        )
        _jobs(cursor, "ready", ready, 100)
        cursor.execute(
            "INSERT INTO robust_queue_ready_execution (job_id, queue_name, priority, created_at) "
            "SELECT id, queue_name, priority, enqueued_at FROM robust_queue_job j "
            "WHERE finished_at IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM robust_queue_failed_execution f WHERE f.job_id = j.id)"
        )
    # Statistics and the visibility map, as autovacuum would leave them.
    connection.set_autocommit(True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def _jobs(cursor, mode: str, count: int, spacing_ms: int) -> None:  # type: ignore[no-untyped-def]
    cursor.execute(
        JOBS_SQL,
        {
            "tag": mode,
            "count": count,
            "spacing": spacing_ms,
            "mode": mode,
            "tasks": TASKS,
            "queues": QUEUES,
            "exceptions": EXCEPTIONS,
            "traceback": TRACEBACK,
        },
    )
