"""The floor of a job's round trips on MySQL/MariaDB, without Django.

    python -m bench.mariadb_floor [--jobs 2000] [--batch 1]

Enqueues no-op jobs through Robust Queue, then claims and finishes them
with the statements the worker sends, built by the same dialect
(``robust_queue.models.sql.dialect_for``: START TRANSACTION, the SKIP LOCKED
select, the claim INSERT, the ready DELETE, the job stamp, the job SELECT,
COMMIT; then START TRANSACTION, the claim DELETE, the job UPDATE, COMMIT),
but run straight through mysqlclient's cursor: no ORM, no cursor wrapper,
no task is run. What this costs per job is what no Python-side change can
remove.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.common import per_job_cost, throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=1)
    options = parser.parse_args()
    with throwaway_database("mariadb"):
        _run(options.jobs, options.batch)


def _run(jobs: int, batch: int) -> None:
    from django.db import connection

    import robust_queue
    from robust_queue.models.sql import dialect_for
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(jobs)])
    statements = dialect_for(connection.alias)
    connection.ensure_connection()
    cursor = connection.connection.cursor()

    def work_off() -> int:
        done = 0
        while claimed := _claim(cursor, statements, batch):
            for claim_id, job_id in claimed:
                _finish(cursor, statements, claim_id, job_id)
                done += 1
        return done

    print(f"mariadb    raw statements, claims of {batch}: {per_job_cost(work_off)}")


def _claim(cursor: Any, statements: Any, batch: int) -> list[tuple[int, int]]:
    from django.utils import timezone

    from robust_queue.models import ReadyExecution
    from robust_queue.models.sql import queue_filter

    now = timezone.now()
    cursor.execute("START TRANSACTION")
    cursor.execute(*statements.lock_ready(batch, queue_filter(None, [])))
    locked = cursor.fetchall()
    if not locked:
        cursor.execute("COMMIT")
        return []
    job_ids = [job_id for _, job_id in locked]
    sql, params, _ = statements.insert_claims(job_ids, None, now)
    cursor.execute(sql, params)
    claims = dict(cursor.fetchall())
    # As the MySQL dialect's delete_ids does: one statement per row.
    table = ReadyExecution._meta.db_table
    for ready_id, _ in locked:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [ready_id])
    cursor.execute(*statements.stamp_jobs(job_ids, "bench", now))
    cursor.execute(*statements.select_jobs(job_ids))
    cursor.fetchall()
    cursor.execute("COMMIT")
    return [(claims[job_id], job_id) for job_id in job_ids]


def _finish(cursor: Any, statements: Any, claim_id: int, job_id: int) -> None:
    from django.utils import timezone

    cursor.execute("START TRANSACTION")
    cursor.execute(*statements.delete_claim(claim_id))
    cursor.execute(*statements.finish_job(job_id, timezone.now(), 2))
    cursor.execute("COMMIT")


if __name__ == "__main__":
    main()
