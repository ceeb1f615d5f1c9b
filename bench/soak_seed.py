"""A history of finished jobs for ``bench.soak``, in one INSERT ... SELECT.

PostgreSQL numbers the rows with ``generate_series`` (as
``bench.admin_seed`` does); MariaDB with its Sequence engine's
``seq_1_to_N`` tables. ``count`` jobs finished over the ``span`` seconds up
to now, evenly spaced, so that retention set to ``span`` clears them at
``count / span`` jobs a second: as fast as a soak at that rate adds new
ones, and the table holds about ``count`` rows throughout.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

COLUMNS = (
    "result_id, task_path, queue_name, priority, backend_alias, arguments, "
    "concurrency_key, rate_key, enqueued_at, started_at, last_attempted_at, finished_at, "
    "worker_ids, errors, return_value, metadata, snoozes"
)

POSTGRESQL = f"""
INSERT INTO robust_queue_job ({COLUMNS}{{others}})
SELECT
    md5('soak' || i::text) || substr(md5(i::text), 1, 11),
    'bench.soak_tasks.work', 'default', 0, 'default',
    jsonb_build_object('args', jsonb_build_array('history-' || i), 'kwargs', '{{}}'::jsonb),
    '', '', at - interval '20 milliseconds', at - interval '10 milliseconds',
    at - interval '10 milliseconds', at,
    '["worker-soak-history-1"]'::jsonb, '[]'::jsonb, '1'::jsonb, '{{}}'::jsonb, 0{{defaults}}
FROM (
    SELECT i, now() - (i::bigint * %(spacing)s * interval '1 microsecond') AS at
    FROM generate_series(1, %(count)s) AS i
) AS series
ORDER BY i DESC
"""

# The oldest first, as they would have been inserted; UTC, as Django stores them.
MARIADB = (
    f"INSERT INTO robust_queue_job ({COLUMNS}{{others}})"
    + """
SELECT
    CONCAT(MD5(CONCAT('soak', seq)), SUBSTR(MD5(seq), 1, 11)),
    'bench.soak_tasks.work', 'default', 0, 'default',
    CONCAT('{"args": ["history-', seq, '"], "kwargs": {}}'),
    '', '', at - INTERVAL 20000 MICROSECOND, at - INTERVAL 10000 MICROSECOND,
    at - INTERVAL 10000 MICROSECOND, at,
    '["worker-soak-history-1"]', '[]', '1', '{}', 0{defaults}
FROM (
    SELECT seq, UTC_TIMESTAMP(6) - INTERVAL (seq * %(spacing)s) MICROSECOND AS at
    FROM seq_1_to_COUNT
) AS series
ORDER BY seq DESC
"""
)


def seed(count: int, span: float) -> None:
    """``count`` finished jobs over the last ``span`` seconds."""
    if count <= 0:
        return
    spacing = max(1, int(span * 1_000_000 / count))
    others, defaults, values = _other_columns()
    params = {"spacing": spacing, "count": count, **values}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql = POSTGRESQL.replace("{others}", others).replace("{defaults}", defaults)
            cursor.execute(sql, params)
        elif connection.vendor == "mysql":
            # The Sequence engine's table is named by its bounds.
            sql = MARIADB.replace("{others}", others).replace("{defaults}", defaults)
            cursor.execute(sql.replace("COUNT", str(int(count))), params)
        else:
            raise SystemExit(f"bench.soak seeds PostgreSQL and MariaDB, not {connection.vendor}")
    analyze()


BACKLOG_PRIORITY = -10

POSTGRESQL_BACKLOG = f"""
INSERT INTO robust_queue_job ({COLUMNS}{{others}})
SELECT
    md5('backlog' || i::text) || substr(md5(i::text), 1, 11),
    'bench.soak_tasks.work', 'default', {BACKLOG_PRIORITY}, 'default',
    jsonb_build_object('args', jsonb_build_array('b' || (i - 1)), 'kwargs', '{{}}'::jsonb),
    '', '', now(), NULL, NULL, NULL, '[]'::jsonb, '[]'::jsonb, NULL, '{{}}'::jsonb, 0{{defaults}}
FROM generate_series(1, %(count)s) AS i
ORDER BY i
"""

MARIADB_BACKLOG = (
    f"INSERT INTO robust_queue_job ({COLUMNS}{{others}})"
    + f"""
SELECT
    CONCAT(MD5(CONCAT('backlog', seq)), SUBSTR(MD5(seq), 1, 11)),
    'bench.soak_tasks.work', 'default', {BACKLOG_PRIORITY}, 'default',
    CONCAT('{{"args": ["b', seq - 1, '"], "kwargs": {{}}}}'),
    '', '', UTC_TIMESTAMP(6), NULL, NULL, NULL, '[]', '[]', NULL, '{{}}', 0{{defaults}}
FROM seq_1_to_COUNT
ORDER BY seq
"""
)

READY = """
INSERT INTO robust_queue_ready_execution (job_id, queue_name, priority, created_at)
SELECT id, queue_name, priority, enqueued_at FROM robust_queue_job WHERE id > %(after)s
ORDER BY id
"""


def backlog(count: int) -> None:
    """``count`` ready jobs of ``bench.soak_tasks.work`` (keys b0, b1, ...)
    at priority -10: new jobs (priority 0) go first, these drain behind."""
    if count <= 0:
        return
    others, defaults, values = _other_columns()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM robust_queue_job")
        (after,) = cursor.fetchone()
        if connection.vendor == "postgresql":
            sql = POSTGRESQL_BACKLOG
        else:
            sql = MARIADB_BACKLOG.replace("COUNT", str(int(count)))
        sql = sql.replace("{others}", others).replace("{defaults}", defaults)
        cursor.execute(sql, {"count": count, **values})
        cursor.execute(READY, {"after": after})
    analyze()


def _other_columns() -> tuple[str, str, dict[str, Any]]:
    """Columns of the job table that ``COLUMNS`` does not name (added
    since), with their model defaults: (", a, b", ", %(a)s, %(b)s", values)."""
    from robust_queue.models import Job

    named = {name.strip() for name in COLUMNS.split(",")} | {"id"}
    fields = [f for f in Job._meta.concrete_fields if f.column not in named]
    others = "".join(f", {f.column}" for f in fields)
    defaults = "".join(f", %({f.column})s" for f in fields)
    values = {f.column: f.get_db_prep_save(f.get_default(), connection) for f in fields}
    return others, defaults, values


def analyze() -> None:
    """Statistics and the visibility map, as autovacuum would leave them."""
    autocommit = connection.get_autocommit()
    connection.set_autocommit(True)
    try:
        with connection.cursor() as cursor:
            for table in ("robust_queue_job", "robust_queue_ready_execution"):
                if connection.vendor == "postgresql":
                    cursor.execute(f"VACUUM ANALYZE {table}")
                else:
                    cursor.execute(f"ANALYZE TABLE {table}")
                    cursor.fetchall()
    finally:
        connection.set_autocommit(autocommit)
