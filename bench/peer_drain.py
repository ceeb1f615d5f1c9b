"""Drain beside django-tasks-db 0.13: the same no-op jobs, the same database.

    python -m bench.peer_drain postgresql [--jobs 4000] [--ours 1x3,2x3]
        [--peer 1,2,4] [--rounds 2]

Needs django-tasks-db installed (``scripts/venv.sh peers``). Each round
drains ``--jobs`` no-op jobs with Robust Queue's supervisor at each shape
of ``--ours`` (``bench.drain``: worker processes x threads) and with the
peer's ``db_worker`` at each number of ``--peer`` processes (one thread
each: its worker has no threads), alternating. Throughput counts from the
first job's start to the last job's finish, from the jobs' own stamps, on
both sides; CPU per job (the workers, and the database server's processes
on PostgreSQL and MariaDB) from a moment every worker is up and the jobs
wait, and jobs per CPU-second from both. Prints each run, then the best
of each side and their ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from bench.common import ROOT, cpu_of, server_pids, throwaway_database
from bench.drain import drain as drain_ours


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--ours", default="1x3,2x3")
    parser.add_argument("--peer", default="1,2,4")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    try:
        import django_tasks_db  # noqa: F401
    except ImportError:
        raise SystemExit("bench.peer_drain needs the peer: scripts/venv.sh peers") from None
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.peer_settings"
    with throwaway_database(options.database):
        _run(options)


def _run(options: argparse.Namespace) -> None:
    shapes = [tuple(int(n) for n in shape.split("x")) for shape in options.ours.split(",")]
    peers = [int(n) for n in options.peer.split(",")]
    best = {"ours": 0.0, "peer": 0.0}
    for _ in range(options.rounds):
        for processes, threads in shapes:
            rate = drain_ours(options.database, options.jobs, processes, threads, 0)
            best["ours"] = max(best["ours"], rate)
        for processes in peers:
            rate = _drain_peer(options.database, options.jobs, processes)
            best["peer"] = max(best["peer"], rate)
    print(
        f"{options.database:10} best drain: Robust Queue {best['ours']:.0f} jobs/s, "
        f"django-tasks-db {best['peer']:.0f} jobs/s; ratio {best['ours'] / best['peer']:.2f}"
    )


def _drain_peer(database: str, jobs: int, processes: int) -> float:
    """The peer's drain: its jobs are enqueued to a queue its workers do
    not take; once every worker has started (its CPU has stopped growing
    for 0.3 s), one UPDATE moves them to theirs, so that, as on our side,
    CPU counts from a moment the workers are up and the jobs wait."""
    from django.conf import settings
    from django.db.models import Max, Min
    from django_tasks_db.models import DBTaskResult

    from bench import peer_tasks

    DBTaskResult.objects.all().delete()
    held = peer_tasks.peer.using(queue_name="held")
    for i in range(jobs):
        held.enqueue(i, 1)
    env = dict(os.environ, ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"])
    command = [
        sys.executable, "manage.py", "db_worker", "--backend", "peer", "--queue-name", "default",
        "--no-startup-delay", "--no-reload", "--interval", "0.1", "-v", "0",
    ]  # fmt: skip
    workers = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(processes)]
    try:
        pids = [worker.pid for worker in workers]
        _until_started(pids)
        workers_before, server_before = cpu_of(pids), cpu_of(server_pids())
        DBTaskResult.objects.filter(queue_name="held").update(queue_name="default")
        while DBTaskResult.objects.exclude(status="SUCCESSFUL").exists():
            if any(worker.poll() is not None for worker in workers):
                raise SystemExit("a db_worker exited before the jobs were done")
            time.sleep(0.05)
        worker_cpu = cpu_of(pids) - workers_before
        server_cpu = cpu_of(server_pids()) - server_before
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)
    span = DBTaskResult.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    rate = jobs / (span["last"] - span["first"]).total_seconds()
    per_job = 1000 / os.sysconf("SC_CLK_TCK") / jobs
    print(
        f"{database:10} drain {jobs} no-op jobs, django-tasks-db db_worker x {processes}: "
        f"{rate:7.0f} jobs/s; CPU/job: {worker_cpu * per_job:.2f} ms workers + "
        f"{server_cpu * per_job:.2f} ms database server "
        f"({1000 / ((worker_cpu + server_cpu) * per_job):.0f} jobs per CPU-second)"
    )
    return rate


def _until_started(pids: list[int]) -> None:
    """Until the processes' CPU has not grown for 0.3 s (Django is set up
    and they poll)."""
    last, still_since = cpu_of(pids), time.monotonic()
    while time.monotonic() - still_since < 0.3:
        time.sleep(0.05)
        now = cpu_of(pids)
        if now > last + len(pids):  # more than polling's jiffy each
            last, still_since = now, time.monotonic()


if __name__ == "__main__":
    main()
