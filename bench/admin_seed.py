"""Fill a PostgreSQL or MariaDB queue with a production-sized history, fast.

1,000,000 finished and 50,000 failed jobs spread over the last week, plus
live ready, scheduled, blocked and running jobs, a week of per-minute
statistics, recurring tasks with their runs and unique keys, written with
``INSERT ... SELECT generate_series`` (a minute, not an hour of ORM
inserts). ``sizes(jobs)`` scales the history to about ``jobs`` jobs, one
in twenty failed (10,000,000: 9,473,000 finished and 500,000 failed).

MariaDB gets the same rows (the same result ids, texts and spacing) from
its Sequence engine's ``seq_A_to_B`` tables, 1,000,000 jobs a statement,
each committed; the job table's secondary indexes are dropped for the
load and built again after it (sorted, not row by row into a buffer pool
smaller than the index), then ``ANALYZE TABLE`` stands in for PostgreSQL's
``VACUUM ANALYZE``.
"""

from __future__ import annotations

from typing import Any

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
# Live jobs beside the history.
SCHEDULED = 20_000
BLOCKED = 2_000
BLOCKED_KEYS = 50
RUNNING = 6
RECURRING_TASKS = 5
RECURRING_RUNS = 2_000
UNIQUE_KEYS = 50_000

JOBS_SQL = """
INSERT INTO robust_queue_job (
    result_id, task_path, queue_name, priority, backend_alias, arguments,
    concurrency_key, enqueued_at, started_at, last_attempted_at, finished_at,
    worker_ids, errors, return_value, metadata, snoozes, rate_key)
SELECT
    md5(%(tag)s || i::text) || substr(md5(i::text), 1, 11),
    'testproject.tasks.' || (%(tasks)s::text[])[1 + i %% 4],
    (%(queues)s::text[])[1 + i %% 3],
    0, 'default', '{"args": [1, 2], "kwargs": {}}'::jsonb,
    CASE WHEN %(mode)s = 'blocked' THEN 'testproject.tasks.add/key-' || (i %% %(keys)s)::text
         ELSE '' END,
    at,
    CASE WHEN %(mode)s IN ('finished', 'failed', 'running') THEN at END,
    CASE WHEN %(mode)s IN ('finished', 'failed', 'running') THEN at END,
    CASE WHEN %(mode)s = 'finished' THEN at + interval '1 second' END,
    CASE WHEN %(mode)s IN ('finished', 'failed', 'running')
         THEN '["worker-bench-host-1-abcdef"]'::jsonb ELSE '[]'::jsonb END,
    CASE WHEN %(mode)s = 'failed' THEN jsonb_build_array(jsonb_build_object(
        'exception_class_path', (%(exceptions)s::text[])[1 + i %% 4],
        'traceback', %(traceback)s || (%(exceptions)s::text[])[1 + i %% 4] || ': failed'))
        ELSE '[]'::jsonb END,
    CASE WHEN %(mode)s = 'finished' THEN '3'::jsonb END,
    '{}'::jsonb, 0, ''
FROM (
    SELECT i, now() - (i * %(spacing)s * interval '1 millisecond') AS at
    FROM generate_series(1, %(count)s) AS i
) AS series
"""

STATISTICS_SQL = """
INSERT INTO robust_queue_statistic (
    minute, queue_name, task_path, finished, failed, retried, discarded, snoozed,
    wait_seconds, run_seconds, {buckets})
SELECT m, q, 'testproject.tasks.' || t, 10, 1, 0, 0, 0, 5.0, 20.0, {values}
FROM generate_series(
        date_trunc('minute', now()) - interval '7 days', date_trunc('minute', now()),
        interval '1 minute') AS m,
     unnest(%(queues)s::text[]) AS q,
     unnest(%(tasks)s::text[]) AS t
"""


def sizes(jobs: int) -> tuple[int, int]:
    """(finished, failed) for about ``jobs`` jobs in all, live ones included."""
    failed = jobs // 20
    live = 5_000 + SCHEDULED + BLOCKED + RUNNING
    return max(jobs - failed - live, 0), failed


def seed(finished: int = 1_000_000, failed: int = 50_000, ready: int = 5_000) -> None:
    week_ms = 7 * 24 * 3600 * 1000
    if connection.vendor == "mysql":
        _seed_mariadb(finished, failed, ready, week_ms)
        return
    with connection.cursor() as cursor:
        _jobs(cursor, "finished", finished, week_ms // finished)
        ids = _jobs(cursor, "failed", failed, week_ms // failed)
        cursor.execute(
            "INSERT INTO robust_queue_failed_execution (job_id, error, created_at) "
            "SELECT id, errors -> 0, last_attempted_at + interval '1 second' "
            "FROM robust_queue_job WHERE id > %s AND id <= %s",
            list(ids),
        )
        _live(cursor, ready)
        _statistics(cursor)
        _recurring(cursor)
        _unique_keys(cursor)
    # Statistics and the visibility map, as autovacuum would leave them.
    connection.set_autocommit(True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def _live(cursor: Any, ready: int) -> None:
    """Ready, scheduled (due within a day), blocked and running jobs."""
    ids = _jobs(cursor, "ready", ready, 100)
    _execution(
        cursor,
        "ready",
        ids,
        "queue_name, priority, created_at",
        "queue_name, priority, enqueued_at",
    )
    ids = _jobs(cursor, "scheduled", SCHEDULED, 10)
    _execution(
        cursor,
        "scheduled",
        ids,
        "queue_name, priority, scheduled_at, created_at",
        "queue_name, priority, now() + (id %% 86400) * interval '1 second', enqueued_at",
    )
    ids = _jobs(cursor, "blocked", BLOCKED, 100)
    _execution(
        cursor,
        "blocked",
        ids,
        "queue_name, priority, concurrency_key, expires_at, created_at",
        "queue_name, priority, concurrency_key, now() + interval '5 minutes', enqueued_at",
    )
    cursor.execute(
        "INSERT INTO robust_queue_semaphore (key, value, expires_at, created_at, updated_at) "
        "SELECT 'testproject.tasks.add/key-' || i, 0, now() + interval '5 minutes', now(), now() "
        "FROM generate_series(0, %s - 1) AS i",
        [BLOCKED_KEYS],
    )
    cursor.execute(
        "INSERT INTO robust_queue_process (kind, name, pid, hostname, last_heartbeat_at, "
        "metadata, created_at) VALUES ('worker', 'worker-bench-host-1-abcdef', 4242, "
        '\'bench-host\', now(), \'{"queues": ["*"], "threads": 6}\', now()) RETURNING id'
    )
    (process,) = cursor.fetchone()
    ids = _jobs(cursor, "running", RUNNING, 1000)
    _execution(cursor, "claimed", ids, "process_id, created_at", f"{int(process)}, enqueued_at")


def _execution(cursor: Any, table: str, ids: tuple[int, int], columns: str, values: str) -> None:
    """An execution row in ``table`` for each job with an id in ``ids``."""
    cursor.execute(
        f"INSERT INTO robust_queue_{table}_execution (job_id, {columns}) "
        f"SELECT id, {values} FROM robust_queue_job WHERE id > %s AND id <= %s",
        list(ids),
    )


def _statistics(cursor: Any) -> None:
    """A week of per-minute rows for every (queue, task), and the totals."""
    from robust_queue.models.statistic import BUCKETS, TOTALS_MINUTE

    names = [f"wait_{i}" for i in range(BUCKETS)] + [f"run_{i}" for i in range(BUCKETS)]
    # Waits around 0.1-0.5 s, runs around 1-2.5 s; one failure a minute.
    values = ["5" if i in (4, 5) else "0" for i in range(BUCKETS)]
    values += ["5" if i in (7, 8) else "0" for i in range(BUCKETS)]
    sql = STATISTICS_SQL.format(buckets=", ".join(names), values=", ".join(values))
    cursor.execute(sql, {"queues": QUEUES, "tasks": TASKS})
    cursor.execute(
        "INSERT INTO robust_queue_statistic (minute, queue_name, task_path, finished, failed, "
        f"retried, discarded, snoozed, wait_seconds, run_seconds, {', '.join(names)}) "
        f"SELECT %s, queue_name, task_path, SUM(finished), SUM(failed), 0, 0, 0, SUM(wait_seconds), "
        f"SUM(run_seconds), {', '.join(f'SUM({n})' for n in names)} "
        "FROM robust_queue_statistic GROUP BY queue_name, task_path",
        [TOTALS_MINUTE],
    )


def _recurring(cursor: Any) -> None:
    cursor.execute(
        "INSERT INTO robust_queue_recurring_task (key, schedule, task_path, arguments, "
        "queue_name, priority, description, static, backend_alias, enabled, created_at, "
        "updated_at) SELECT 'nightly-' || i, '*/5 * * * *', 'testproject.tasks.report', "
        "'{\"args\": [7], \"kwargs\": {}}', '', 0, '', true, 'default', true, now(), now() "
        "FROM generate_series(1, %s) AS i",
        [RECURRING_TASKS],
    )
    cursor.execute(
        "INSERT INTO robust_queue_recurring_execution (task_key, run_at, job_id, created_at) "
        "SELECT 'nightly-' || (1 + i %% %s), date_trunc('minute', now()) "
        "- (i * interval '5 minutes'), (SELECT MIN(id) FROM robust_queue_job) + i, now() "
        "FROM generate_series(1, %s) AS i",
        [RECURRING_TASKS, RECURRING_RUNS],
    )


def _unique_keys(cursor: Any) -> None:
    """Unique keys held by the newest finished jobs."""
    cursor.execute(
        "INSERT INTO robust_queue_unique_key (key_hash, key, result_id, created_at, updated_at) "
        "SELECT encode(sha256(convert_to('unique:' || task_path || '/' || id, 'UTF8')), 'hex'), "
        "'unique:' || task_path || '/' || id, result_id, now(), now() "
        "FROM robust_queue_job WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT %s",
        [UNIQUE_KEYS],
    )


def _jobs(cursor: Any, mode: str, count: int, spacing_ms: int) -> tuple[int, int]:
    """Insert ``count`` jobs of ``mode``; returns (last id before, last id)."""
    before = _max_id(cursor)
    cursor.execute(
        JOBS_SQL,
        {
            "tag": mode,
            "count": count,
            "spacing": spacing_ms,
            "mode": mode,
            "keys": BLOCKED_KEYS,
            "tasks": TASKS,
            "queues": QUEUES,
            "exceptions": EXCEPTIONS,
            "traceback": TRACEBACK,
        },
    )
    return before, _max_id(cursor)


def _max_id(cursor: Any) -> int:
    cursor.execute("SELECT COALESCE(MAX(id), 0) FROM robust_queue_job")
    return int(cursor.fetchone()[0])


# MariaDB: the same rows, from the Sequence engine (``SEQ`` is replaced by
# one chunk's ``seq_A_to_B`` table). Times are UTC, as Django stores them.
CHUNK = 1_000_000

MARIADB_JOBS_SQL = """
INSERT INTO robust_queue_job (
    result_id, task_path, queue_name, priority, backend_alias, arguments,
    concurrency_key, enqueued_at, started_at, last_attempted_at, finished_at,
    worker_ids, errors, return_value, metadata, snoozes, rate_key)
SELECT
    CONCAT(MD5(CONCAT(%(tag)s, seq)), SUBSTR(MD5(seq), 1, 11)),
    CONCAT('testproject.tasks.', ELT(1 + seq %% 4, TASKS)),
    ELT(1 + seq %% 3, QUEUES),
    0, 'default', '{"args": [1, 2], "kwargs": {}}',
    CASE WHEN %(mode)s = 'blocked' THEN CONCAT('testproject.tasks.add/key-', seq %% %(keys)s)
         ELSE '' END,
    at,
    CASE WHEN %(mode)s IN ('finished', 'failed', 'running') THEN at END,
    CASE WHEN %(mode)s IN ('finished', 'failed', 'running') THEN at END,
    CASE WHEN %(mode)s = 'finished' THEN at + INTERVAL 1 SECOND END,
    CASE WHEN %(mode)s IN ('finished', 'failed', 'running')
         THEN '["worker-bench-host-1-abcdef"]' ELSE '[]' END,
    CASE WHEN %(mode)s = 'failed' THEN JSON_ARRAY(JSON_OBJECT(
        'exception_class_path', ELT(1 + seq %% 4, EXCEPTIONS),
        'traceback', CONCAT(%(traceback)s, ELT(1 + seq %% 4, EXCEPTIONS), ': failed')))
        ELSE '[]' END,
    CASE WHEN %(mode)s = 'finished' THEN '3' END,
    '{}', 0, ''
FROM (
    SELECT seq, CAST(%(now)s AS DATETIME(6)) - INTERVAL (seq * %(spacing)s * 1000) MICROSECOND
        AS at
    FROM SEQ
) AS series
ORDER BY seq
"""

MARIADB_STATISTICS_SQL = """
INSERT INTO robust_queue_statistic (
    minute, queue_name, task_path, finished, failed, retried, discarded, snoozed,
    wait_seconds, run_seconds, {buckets})
SELECT base - INTERVAL m.seq MINUTE, q.name, CONCAT('testproject.tasks.', t.name),
    10, 1, 0, 0, 0, 5.0, 20.0, {values}
FROM (SELECT CAST(DATE_FORMAT(UTC_TIMESTAMP(), '%%Y-%%m-%%d %%H:%%i:00') AS DATETIME(6))
        AS base) AS b
CROSS JOIN seq_0_to_10080 AS m
CROSS JOIN ({queues}) AS q
CROSS JOIN ({tasks}) AS t
"""


def _literals(names: list[str]) -> str:
    """``'a', 'b'``: constants of this module, no quoting needed."""
    assert not any("'" in name or "\\" in name or "%" in name for name in names)
    return ", ".join(f"'{name}'" for name in names)


def _rows_of(names: list[str]) -> str:
    """A derived table of one column ``name``, one row per name."""
    return " UNION ALL ".join(f"SELECT '{name}' AS name" for name in names)


def _seed_mariadb(finished: int, failed: int, ready: int, week_ms: int) -> None:
    """``seed`` on MariaDB: the job table's secondary indexes are built once
    the history is in, then every table is analyzed."""
    with connection.cursor() as cursor:
        indexes = _drop_secondary_indexes(cursor, "robust_queue_job")
        try:
            _mariadb_jobs(cursor, "finished", finished, week_ms // finished)
            ids = _mariadb_jobs(cursor, "failed", failed, week_ms // failed)
        finally:
            if indexes:
                cursor.execute(
                    "ALTER TABLE robust_queue_job "
                    + ", ".join(f"ADD {definition}" for definition in indexes)
                )
        for first in range(ids[0], ids[1], CHUNK):
            cursor.execute(
                "INSERT INTO robust_queue_failed_execution (job_id, error, created_at) "
                "SELECT id, JSON_EXTRACT(errors, '$[0]'), last_attempted_at + INTERVAL 1 SECOND "
                "FROM robust_queue_job WHERE id > %s AND id <= %s ORDER BY id",
                [first, min(first + CHUNK, ids[1])],
            )
        _mariadb_live(cursor, ready)
        _mariadb_statistics(cursor)
        _mariadb_recurring(cursor)
        cursor.execute(
            "INSERT INTO robust_queue_unique_key (key_hash, `key`, result_id, created_at, "
            "updated_at) SELECT SHA2(CONCAT('unique:', task_path, '/', id), 256), "
            "CONCAT('unique:', task_path, '/', id), result_id, UTC_TIMESTAMP(6), "
            "UTC_TIMESTAMP(6) FROM robust_queue_job WHERE finished_at IS NOT NULL "
            "ORDER BY id DESC LIMIT %s",
            [UNIQUE_KEYS],
        )
        # Statistics, as InnoDB's own recalculation would leave them.
        cursor.execute("SHOW TABLES LIKE 'robust\\_queue\\_%%'", [])
        tables = [row[0] for row in cursor.fetchall()]
        cursor.execute(f"ANALYZE TABLE {', '.join(tables)}")
        cursor.fetchall()


def _drop_secondary_indexes(cursor: Any, table: str) -> list[str]:
    """Drop ``table``'s secondary indexes; their definitions, to add back."""
    cursor.execute(f"SHOW CREATE TABLE {table}")
    definitions = [
        line.strip().rstrip(",")
        for line in cursor.fetchone()[1].splitlines()
        if line.strip().startswith(("KEY ", "UNIQUE KEY ", "FULLTEXT KEY "))
    ]
    names = [definition.split("`")[1] for definition in definitions]
    if names:
        cursor.execute(f"ALTER TABLE {table} " + ", ".join(f"DROP INDEX `{n}`" for n in names))
    return definitions


def _mariadb_jobs(cursor: Any, mode: str, count: int, spacing_ms: int) -> tuple[int, int]:
    """``_jobs`` on MariaDB, ``CHUNK`` jobs a statement (each committed)."""
    before = _max_id(cursor)
    cursor.execute("SELECT UTC_TIMESTAMP(6)", [])
    (now,) = cursor.fetchone()
    sql = (
        MARIADB_JOBS_SQL.replace("TASKS", _literals(TASKS))
        .replace("QUEUES", _literals(QUEUES))
        .replace("EXCEPTIONS", _literals(EXCEPTIONS))
    )
    params = {
        "tag": mode,
        "mode": mode,
        "keys": BLOCKED_KEYS,
        "traceback": TRACEBACK,
        "now": now,
        "spacing": spacing_ms,
    }
    for first in range(1, count + 1, CHUNK):
        last = min(first + CHUNK - 1, count)
        cursor.execute(sql.replace("SEQ", f"seq_{first}_to_{last}"), params)
    return before, _max_id(cursor)


def _mariadb_live(cursor: Any, ready: int) -> None:
    ids = _mariadb_jobs(cursor, "ready", ready, 100)
    _execution(
        cursor,
        "ready",
        ids,
        "queue_name, priority, created_at",
        "queue_name, priority, enqueued_at",
    )
    ids = _mariadb_jobs(cursor, "scheduled", SCHEDULED, 10)
    _execution(
        cursor,
        "scheduled",
        ids,
        "queue_name, priority, scheduled_at, created_at",
        "queue_name, priority, UTC_TIMESTAMP(6) + INTERVAL (id %% 86400) SECOND, enqueued_at",
    )
    ids = _mariadb_jobs(cursor, "blocked", BLOCKED, 100)
    _execution(
        cursor,
        "blocked",
        ids,
        "queue_name, priority, concurrency_key, expires_at, created_at",
        "queue_name, priority, concurrency_key, UTC_TIMESTAMP(6) + INTERVAL 5 MINUTE, enqueued_at",
    )
    cursor.execute(
        "INSERT INTO robust_queue_semaphore (`key`, value, expires_at, created_at, updated_at) "
        "SELECT CONCAT('testproject.tasks.add/key-', seq), 0, "
        "UTC_TIMESTAMP(6) + INTERVAL 5 MINUTE, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) "
        f"FROM seq_0_to_{BLOCKED_KEYS - 1}",
        [],
    )
    cursor.execute(
        "INSERT INTO robust_queue_process (kind, name, pid, hostname, last_heartbeat_at, "
        "metadata, created_at) VALUES ('worker', 'worker-bench-host-1-abcdef', 4242, "
        '\'bench-host\', UTC_TIMESTAMP(6), \'{"queues": ["*"], "threads": 6}\', '
        "UTC_TIMESTAMP(6))",
        [],
    )
    process = cursor.lastrowid
    ids = _mariadb_jobs(cursor, "running", RUNNING, 1000)
    _execution(cursor, "claimed", ids, "process_id, created_at", f"{int(process)}, enqueued_at")


def _mariadb_statistics(cursor: Any) -> None:
    """``_statistics`` on MariaDB: 10,081 minutes x 3 queues x 4 tasks, and the totals."""
    from robust_queue.models.statistic import BUCKETS, TOTALS_MINUTE

    names = [f"wait_{i}" for i in range(BUCKETS)] + [f"run_{i}" for i in range(BUCKETS)]
    values = ["5" if i in (4, 5) else "0" for i in range(BUCKETS)]
    values += ["5" if i in (7, 8) else "0" for i in range(BUCKETS)]
    sql = MARIADB_STATISTICS_SQL.format(
        buckets=", ".join(names),
        values=", ".join(values),
        queues=_rows_of(QUEUES),
        tasks=_rows_of(TASKS),
    )
    cursor.execute(sql, [])
    cursor.execute(
        "INSERT INTO robust_queue_statistic (minute, queue_name, task_path, finished, failed, "
        f"retried, discarded, snoozed, wait_seconds, run_seconds, {', '.join(names)}) "
        f"SELECT %s, queue_name, task_path, SUM(finished), SUM(failed), 0, 0, 0, SUM(wait_seconds), "
        f"SUM(run_seconds), {', '.join(f'SUM({n})' for n in names)} "
        "FROM robust_queue_statistic GROUP BY queue_name, task_path",
        [connection.ops.adapt_datetimefield_value(TOTALS_MINUTE)],
    )


def _mariadb_recurring(cursor: Any) -> None:
    cursor.execute(
        "INSERT INTO robust_queue_recurring_task (`key`, schedule, task_path, arguments, "
        "queue_name, priority, description, static, backend_alias, enabled, created_at, "
        "updated_at) SELECT CONCAT('nightly-', seq), '*/5 * * * *', 'testproject.tasks.report', "
        "'{\"args\": [7], \"kwargs\": {}}', '', 0, '', true, 'default', true, "
        f"UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM seq_1_to_{RECURRING_TASKS}",
        [],
    )
    cursor.execute(
        "INSERT INTO robust_queue_recurring_execution (task_key, run_at, job_id, created_at) "
        "SELECT CONCAT('nightly-', 1 + seq %% %s), "
        "CAST(DATE_FORMAT(UTC_TIMESTAMP(), '%%Y-%%m-%%d %%H:%%i:00') AS DATETIME(6)) "
        "- INTERVAL (seq * 5) MINUTE, (SELECT MIN(id) FROM robust_queue_job) + seq, "
        f"UTC_TIMESTAMP(6) FROM seq_1_to_{RECURRING_RUNS}",
        [RECURRING_TASKS],
    )
