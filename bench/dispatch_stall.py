"""Claims while a dispatcher moves a flood of due scheduled jobs to ready.

    python -m bench.dispatch_stall postgresql [--scheduled 100000]
        [--ready 100000] [--claims 1500] [--batch 3]

Seeds ``--ready`` ready jobs and ``--scheduled`` scheduled jobs that are all
due (server-side SQL, as bench.backlog), then claims and performs jobs
in-process: ``--claims`` claims before, claims for as long as a real
dispatcher (``manage.py robust_queue --only-dispatch``, batch 500) moves
the due jobs, and ``--claims`` after it is done. Prints claim time p50, p95
and max of each phase, and how fast the dispatcher went.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time

from bench.backlog import percentile, seed
from bench.common import start_supervisor, throwaway_database

SCHEDULED = """
INSERT INTO robust_queue_scheduled_execution (job_id, queue_name, priority, scheduled_at,
    created_at)
SELECT id, queue_name, priority, {past}, {now} FROM robust_queue_job
WHERE id > %s AND finished_at IS NULL
"""
DISPATCHER = {"dispatchers": [{"batch_size": 500, "polling_interval": 0.1}]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb"])
    parser.add_argument("--scheduled", type=int, default=100_000)
    parser.add_argument("--ready", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=3)
    options = parser.parse_args()
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_dispatch_stall")
    with throwaway_database(options.database):
        _run(options)


def _run(options: argparse.Namespace) -> None:
    from robust_queue.models import ScheduledExecution

    seed("default", options.ready)
    _seed_scheduled(options.scheduled)
    label = f"{options.database:10} {options.ready:,} ready, {options.scheduled:,} due scheduled"
    _report(label, "before", _claims(options.batch, options.claims))
    dispatcher = _start_dispatcher()
    start = time.perf_counter()
    during = _claims(options.batch, None)
    elapsed = time.perf_counter() - start
    _stop(dispatcher)
    _report(label, "during", during)
    print(f"{label}: dispatched in {elapsed:.1f} s ({options.scheduled / elapsed:,.0f} jobs/s)")
    _report(label, "after", _claims(options.batch, options.claims))
    assert not ScheduledExecution.objects.exists()


def _seed_scheduled(count: int) -> None:
    """``count`` scheduled jobs, due a minute ago, turned from ready ones."""
    from django.db import connection
    from django.db.models import Max

    from robust_queue.models import Job

    last = Job.objects.aggregate(last=Max("id"))["last"] or 0
    seed("default", count)
    if connection.vendor == "postgresql":
        past, now = "now() - interval '1 minute'", "now()"
    else:
        past, now = "NOW(6) - INTERVAL 1 MINUTE", "NOW(6)"
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM robust_queue_ready_execution WHERE job_id > %s", [last])
        cursor.execute(SCHEDULED.format(past=past, now=now), [last])


def _claims(batch: int, count: int | None) -> list[float]:
    """Claim times of ``count`` claims, each performed; None: until no
    scheduled job is left (checked every 20 claims)."""
    from robust_queue.models import ReadyExecution, ScheduledExecution
    from robust_queue.running.performing import perform

    times: list[float] = []
    while count is None or len(times) < count:
        if count is None and len(times) % 20 == 0 and not ScheduledExecution.objects.exists():
            break
        began = time.perf_counter()
        rows = ReadyExecution.objects.claim(
            batch, process_id=None, worker_id="bench", paused_tasks=()
        )
        times.append(time.perf_counter() - began)
        for row in rows:
            perform(row)
    return times


def _report(label: str, phase: str, times: list[float]) -> None:
    print(
        f"{label}, {phase:6}: {len(times):5} claims, claim p50 "
        f"{percentile(times, 50):5.2f} p95 {percentile(times, 95):6.2f} "
        f"max {max(times) * 1000:7.2f} ms; load {os.getloadavg()[0]:.1f}"
    )


def _start_dispatcher() -> subprocess.Popen[bytes]:
    return start_supervisor(DISPATCHER, "--only-dispatch")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


if __name__ == "__main__":
    main()
