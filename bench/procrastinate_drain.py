"""Drain beside procrastinate 3, on PostgreSQL: throughput and CPU per job.

    python -m bench.procrastinate_drain [--jobs 4000] [--ours 2x3] [--peer 2x4] [--rounds 2]

Needs procrastinate installed (``scripts/venv.sh peers``). In one
throwaway database, each round drains ``--jobs`` no-op jobs with Robust
Queue's supervisor at each shape of ``--ours`` (``bench.drain``: worker
processes x threads) and with procrastinate's workers at each shape of
``--peer`` (processes x ``--concurrency``), alternating. Procrastinate's
jobs are deferred (``batch_defer``) to a queue its workers do not listen
to; once every worker has registered, one UPDATE moves them to theirs
(picked up by polling, every 0.1 s), so, as on our side, CPU counts from
a moment every worker is up with the jobs waiting. Throughput runs from
the first job's start to the last job's end, from the jobs' own stamps
(procrastinate's events). CPU per job is split into the worker processes
and the database server (every PostgreSQL process on the machine); jobs
per CPU-second is 1 / (workers + server). Prints each run and the
medians of each shape.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

from bench import common
from bench.common import ROOT, cpu_of, require_procrastinate, server_pids, throwaway_database
from bench.drain import drain as drain_ours


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--ours", default="2x3")
    parser.add_argument("--peer", default="2x4")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    require_procrastinate("bench.procrastinate_drain")
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_procrastinate_drain")
    with throwaway_database("postgresql"):
        _run(options)


def _shapes(value: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in (shape.split("x") for shape in value.split(","))]


def _run(options: argparse.Namespace) -> None:
    conninfo = common.conninfo()
    os.environ["PROCRASTINATE_CONNINFO"] = conninfo
    from bench.peer_procrastinate import app

    with app.open():
        app.schema_manager.apply_schema()
    rates: dict[str, list[float]] = {}
    for _ in range(options.rounds):
        for processes, threads in _shapes(options.ours):
            _vacuum(conninfo)
            rate = drain_ours("postgresql", options.jobs, processes, threads, 0)
            rates.setdefault(f"Robust Queue {processes}x{threads}", []).append(rate)
        for processes, concurrency in _shapes(options.peer):
            _vacuum(conninfo)
            rate = _drain_peer(conninfo, options.jobs, processes, concurrency)
            rates.setdefault(f"procrastinate {processes}x{concurrency}", []).append(rate)
    for side, values in rates.items():
        print(f"postgresql median drain, {side}: {statistics.median(values):.0f} jobs/s")


def _drain_peer(conninfo: str, jobs: int, processes: int, concurrency: int) -> float:
    import procrastinate
    import psycopg

    from bench.peer_procrastinate import app

    with psycopg.connect(conninfo, autocommit=True) as db:
        connector = procrastinate.SyncPsycopgConnector(conninfo=conninfo)
        with app.replace_connector(connector) as sync_app, sync_app.open():
            held = sync_app.tasks["add"].configure(queue="held")
            for start in range(0, jobs, 1000):
                held.batch_defer(*({"a": i, "b": 1} for i in range(start, min(jobs, start + 1000))))
        workers = [_start_worker(conninfo, concurrency) for _ in range(processes)]
        try:
            while _count(db, "SELECT count(*) FROM procrastinate_workers") < processes:
                time.sleep(0.05)
            pids = [worker.pid for worker in workers]
            workers_before, server_before = cpu_of(pids), cpu_of(server_pids())
            db.execute(
                "UPDATE procrastinate_jobs SET queue_name = 'bench' WHERE queue_name = 'held'"
            )
            while _count(db, "SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'"):
                time.sleep(0.05)
            worker_cpu = cpu_of(pids) - workers_before
            server_cpu = cpu_of(server_pids()) - server_before
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                worker.wait(timeout=30)
        row: Any = db.execute(
            "SELECT min(at) FILTER (WHERE type = 'started'), "
            "max(at) FILTER (WHERE type = 'succeeded') FROM procrastinate_events"
        ).fetchone()
    elapsed = (row[1] - row[0]).total_seconds()
    per_job = 1000 / os.sysconf("SC_CLK_TCK") / jobs
    per_cpu_second = 1000 / ((worker_cpu + server_cpu) * per_job)
    print(
        f"postgresql drain {jobs} no-op jobs, procrastinate {processes}x{concurrency}: "
        f"{jobs / elapsed:7.0f} jobs/s; CPU/job: {worker_cpu * per_job:.2f} ms workers + "
        f"{server_cpu * per_job:.2f} ms database server = {per_cpu_second:.0f} jobs per CPU-second"
    )
    return jobs / elapsed


def _vacuum(conninfo: str) -> None:
    """Every run starts on tables without the last run's dead rows (a
    server with autovacuum off, as CI's, would otherwise slow each run
    after the first: the claims read past them)."""
    import psycopg
    from django.db import connection

    connection.close()  # no transaction of ours holds rows back
    with psycopg.connect(conninfo, autocommit=True) as db:
        db.execute("DELETE FROM robust_queue_job")
        db.execute("TRUNCATE procrastinate_jobs, procrastinate_workers CASCADE")
        db.execute("VACUUM ANALYZE")


def _count(db: Any, sql: str) -> int:
    return int(db.execute(sql).fetchone()[0])


def _start_worker(conninfo: str, concurrency: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "procrastinate",
        "--app=bench.peer_procrastinate.app",
        "worker",
        "--queues=bench",
        f"--concurrency={concurrency}",
        "--fetch-job-polling-interval=0.1",
    ]
    env = dict(os.environ, PROCRASTINATE_CONNINFO=conninfo)
    return subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
