"""A bare client doing a queue's least work per job on PostgreSQL, beside
our drain: the floor issue 26 measures the drain against.

    python -m bench.pg_floor [--jobs 4000] [--threads 6] [--ours 2x3] [--rounds 2]

The bare client: ``--threads`` threads in one process, each with its own
psycopg connection in autocommit mode (psycopg prepares repeated
statements itself), over a table of its own (id, state, arguments, result)
holding ``--jobs`` jobs. Per job two statements, two commits: claim the
lowest waiting id (``UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP
LOCKED)``), then mark it done with a result. No task is looked up or run,
nothing is recorded beyond that: what no queue of the kind can go under.
Each round runs it and our drain (``bench.drain``: worker processes x
threads), alternating, each on vacuumed tables; prints each run and the
medians, and ours / the floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

from bench import common
from bench.common import throwaway_database
from bench.drain import drain as drain_ours

CLAIM = (
    "UPDATE floor_job SET state = 'doing' WHERE id = ("
    "SELECT id FROM floor_job WHERE state = 'todo' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
    ") RETURNING id, arguments"
)
FINISH = "UPDATE floor_job SET state = 'done', result = %s WHERE id = %s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--ours", default="2x3")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_pg_floor")
    with throwaway_database("postgresql"):
        _run(options)


def _run(options: argparse.Namespace) -> None:
    conninfo = common.conninfo()
    processes, threads = (int(n) for n in options.ours.split("x"))
    rates: dict[str, list[float]] = {"floor": [], "ours": []}
    for _ in range(options.rounds):
        _prepare(conninfo, 0)
        rates["ours"].append(drain_ours("postgresql", options.jobs, processes, threads, 0))
        _prepare(conninfo, options.jobs)
        rates["floor"].append(_floor(conninfo, options.jobs, options.threads))
    floor, ours = statistics.median(rates["floor"]), statistics.median(rates["ours"])
    print(
        f"postgresql medians: bare client {floor:.0f} jobs/s ({options.threads} threads, "
        f"2 commits per job), Robust Queue {options.ours} {ours:.0f} jobs/s: "
        f"ours / floor {ours / floor:.2f}"
    )


def _prepare(conninfo: str, jobs: int) -> None:
    """Empty vacuumed tables, and ``jobs`` waiting jobs in the floor's."""
    import psycopg
    from django.db import connection

    connection.close()
    with psycopg.connect(conninfo, autocommit=True) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS floor_job (id bigserial PRIMARY KEY, "
            "state text NOT NULL, arguments jsonb NOT NULL, result jsonb)"
        )
        db.execute(
            "CREATE INDEX IF NOT EXISTS floor_job_todo ON floor_job (id) WHERE state = 'todo'"
        )
        db.execute("TRUNCATE floor_job")
        db.execute("DELETE FROM robust_queue_job")
        db.execute(
            "INSERT INTO floor_job (state, arguments) SELECT 'todo', "
            "jsonb_build_object('args', jsonb_build_array(i, 1)) FROM generate_series(1, %s) AS i",
            [jobs],
        )
        db.execute("VACUUM ANALYZE")


def _floor(conninfo: str, jobs: int, threads: int) -> float:
    import psycopg

    done: list[int] = []
    stamps: list[float] = []

    def work() -> None:
        with psycopg.connect(conninfo, autocommit=True) as db:
            mine = 0
            while row := db.execute(CLAIM).fetchone():
                job_id, arguments = row
                result = sum(arguments["args"])
                db.execute(FINISH, [psycopg.types.json.Jsonb(result), job_id])
                mine += 1
            done.append(mine)
            stamps.append(time.perf_counter())

    start = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sum(done) == jobs, (sum(done), jobs)
    rate = jobs / (max(stamps) - start)
    print(f"postgresql bare client, {threads} threads, 2 commits per job: {rate:7.0f} jobs/s")
    return rate


if __name__ == "__main__":
    main()
