"""The floor of a job's round trips on MySQL/MariaDB, without Django.

    python -m bench.mariadb_floor [--jobs 2000] [--batch 1]

Enqueues no-op jobs through Robust Queue, then claims and finishes them
with the same statements the worker sends (START TRANSACTION, the SKIP
LOCKED select, the claim INSERT, the ready DELETE, the job stamp, the job
SELECT, COMMIT; then START TRANSACTION, the claim DELETE, the job UPDATE,
COMMIT), straight through mysqlclient: no ORM, no cursor wrappers, no task
is run. What this costs per job is what no Python-side change can remove.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.common import cpu_of, server_pids, setup_django, teardown_django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=1)
    options = parser.parse_args()
    setup_django("mariadb")
    try:
        _run(options.jobs, options.batch)
    finally:
        teardown_django()


def _run(jobs: int, batch: int) -> None:
    import robust_queue
    from django.db import connection
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(jobs)])
    connection.ensure_connection()
    raw = connection.connection
    cursor = raw.cursor()
    server = server_pids()
    wall, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_of(server)
    done = 0
    while claimed := _claim(cursor, batch):
        for claim_id, job_id in claimed:
            _finish(cursor, claim_id, job_id)
            done += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server_ms = (cpu_of(server) - server_cpu) * 1000 / os.sysconf("SC_CLK_TCK")
    print(f"mariadb    raw statements, claims of {batch}: {wall / done * 1000:.2f} ms wall, "
          f"{cpu / done * 1000:.2f} ms CPU + {server_ms / done:.2f} ms database server "
          f"per job ({done} jobs)")


def _claim(cursor, batch: int) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    cursor.execute("START TRANSACTION")
    cursor.execute(
        "SELECT id, job_id FROM robust_queue_ready_execution WHERE 1 = 1 "
        "ORDER BY priority DESC, job_id LIMIT %s FOR UPDATE SKIP LOCKED", [batch]
    )
    locked = cursor.fetchall()
    if not locked:
        cursor.execute("COMMIT")
        return []
    job_ids = [job_id for _, job_id in locked]
    marks = ", ".join(["%s"] * len(job_ids))
    values = ", ".join(["(%s, NULL, NOW(6))"] * len(job_ids))
    cursor.execute(
        f"INSERT INTO robust_queue_claimed_execution (job_id, process_id, created_at) "
        f"VALUES {values} RETURNING job_id, id", job_ids
    )
    claims = dict(cursor.fetchall())
    for ready_id, _ in locked:
        cursor.execute("DELETE FROM robust_queue_ready_execution WHERE id = %s", [ready_id])
    cursor.execute(
        "UPDATE robust_queue_job SET started_at = COALESCE(started_at, NOW(6)), "
        "last_attempted_at = NOW(6), worker_ids = JSON_ARRAY_APPEND(worker_ids, '$', 'w') "
        f"WHERE id IN ({marks})", job_ids
    )
    cursor.execute(f"SELECT * FROM robust_queue_job WHERE id IN ({marks})", job_ids)
    cursor.fetchall()
    cursor.execute("COMMIT")
    return [(claims[job_id], job_id) for job_id in job_ids]


def _finish(cursor, claim_id: int, job_id: int) -> None:  # type: ignore[no-untyped-def]
    cursor.execute("START TRANSACTION")
    cursor.execute("DELETE FROM robust_queue_claimed_execution WHERE id = %s", [claim_id])
    cursor.execute(
        "UPDATE robust_queue_job SET finished_at = NOW(6), return_value = '2' WHERE id = %s",
        [job_id],
    )
    cursor.execute("COMMIT")


if __name__ == "__main__":
    main()
