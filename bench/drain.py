"""Drain throughput, pickup latency and memory of the real supervisor.

    python -m bench.drain postgresql [--jobs 5000] [--shapes 1x3,2x3]
        [--sleep-ms 0] [--no-latency] [--steady 300 [--steady-seconds 60]]

Starts `manage.py robust_queue` against a throw-away database and reports:
jobs/s draining no-op tasks with each worker shape (processes x threads;
1 and 2 processes of 3 threads by default), machine-wide CPU per job
(worker, dispatcher and database together), pickup latency p50/p95 of one
job at a time with an idle worker, and the RSS/PSS of the supervisor's
process tree (the peak while draining, read every 0.25 s).
``--sleep-ms`` makes each job an I/O-bound one that sleeps that long
(``testproject.tasks.sleep_for``), against the ideal of every thread
always sleeping: processes x threads / sleep jobs/s. ``--steady R``:
pickup latency p50/p95/p99 of no-op jobs enqueued one by one at a steady
R jobs/s for ``--steady-seconds``, by the default shape (2 x 3 threads),
from each job's enqueue to its start (``--jobs 0 --no-latency`` runs it
alone).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

from bench.common import cpu_of, process_tree, server_pids, start_supervisor, throwaway_database

CONFIG = {
    "dispatchers": [{"batch_size": 500, "polling_interval": 0.2}],
    "process_heartbeat_interval": 5,
    "process_alive_threshold": 60,
}

# Extra worker options for every drain, as JSON (``{"finish_batch": 3}``).
WORKER_OPTIONS = json.loads(os.environ.get("ROBUST_QUEUE_BENCH_WORKER", "{}"))

# How often the supervisor tree's memory is read during a drain (its peak
# is reported).
MEMORY_EVERY = 0.25


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--shapes", type=_shapes, default=[(1, 3), (2, 3)])
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--steady", type=float, help="jobs/s arriving, for the pickup latency")
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    options = parser.parse_args()
    with throwaway_database(options.database):
        for processes, threads in options.shapes if options.jobs else ():
            drain(options.database, options.jobs, processes, threads, options.sleep_ms)
        if not options.no_latency:
            _latency(options.database, options.samples)
        if options.steady:
            _steady(options.database, options.steady, options.steady_seconds)


def _shapes(value: str) -> list[tuple[int, int]]:
    """``2x16,2x8``: worker processes x threads each."""
    try:
        return [(int(p), int(t)) for p, t in (shape.split("x") for shape in value.split(","))]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: shapes are PxT[,PxT...]") from None


def _start(processes: int, polling: float = 0.1, threads: int = 3) -> subprocess.Popen[bytes]:
    worker = {"queues": ["*"], "threads": threads, "processes": processes, **WORKER_OPTIONS}
    return start_supervisor({**CONFIG, "workers": [{**worker, "polling_interval": polling}]})


def _stop(supervisor: subprocess.Popen[bytes]) -> None:
    supervisor.send_signal(signal.SIGTERM)
    supervisor.wait(timeout=30)


def drain(database: str, jobs: int, processes: int, threads: int, sleep_ms: float) -> float:
    from django.db.models import Max, Min

    import robust_queue
    from robust_queue.models import Job, Pause, Process
    from testproject import tasks

    Job.objects.all().delete()
    # Enqueue into a paused queue and start the supervisor, so that CPU is
    # counted from the moment every worker is up and the queue resumes.
    pause = Pause.objects.create(queue_name="default")
    for start in range(0, jobs, 1000):
        robust_queue.enqueue_all(
            [
                (tasks.sleep_for, (sleep_ms / 1000,), {}) if sleep_ms else (tasks.add, (i, 1), {})
                for i in range(start, min(jobs, start + 1000))
            ]
        )
    supervisor = _start(processes, threads=threads)
    while Process.objects.filter(kind="worker").count() < processes:
        time.sleep(0.05)
    time.sleep(0.5)
    tree = process_tree(supervisor.pid)
    cpu_before = _busy_jiffies()
    tree_before, server_before = cpu_of(tree), cpu_of(server_pids())
    pause.delete()
    memory = {"rss": 0, "pss": 0}
    sampled = 0.0
    while Job.objects.filter(finished_at__isnull=True).exists():
        if time.monotonic() - sampled >= MEMORY_EVERY:
            sampled = time.monotonic()
            memory = max(memory, _tree_memory(supervisor.pid), key=lambda m: m["pss"])
        time.sleep(0.05)
    memory = max(memory, _tree_memory(supervisor.pid), key=lambda m: m["pss"])
    cpu = _busy_jiffies() - cpu_before
    tree_cpu = cpu_of(tree) - tree_before
    server_cpu = cpu_of(server_pids()) - server_before
    _stop(supervisor)
    # Throughput from the jobs' own stamps: the first start to the last
    # finish, whatever the workers' pause cache adds before the first claim.
    span = Job.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    elapsed = (span["last"] - span["first"]).total_seconds()
    per_job = 1000 / os.sysconf("SC_CLK_TCK") / jobs
    what = f"{sleep_ms:g} ms sleep" if sleep_ms else "no-op"
    ideal = ""
    if sleep_ms:
        ideal = f" = {jobs / elapsed / (processes * threads * 1000 / sleep_ms):.0%} of the ideal"
    print(
        f"{database:10} drain {jobs} {what} jobs, {processes}x{threads} worker "
        f"({len(tree)} processes in the tree): "
        f"{jobs / elapsed:7.0f} jobs/s{ideal}; CPU/job: {cpu * per_job:.2f} ms machine-wide = "
        f"{tree_cpu * per_job:.2f} ms supervisor tree + {server_cpu * per_job:.2f} ms "
        f"database server + rest ({1000 / ((tree_cpu + server_cpu) * per_job):.0f} jobs per "
        f"CPU-second of the tree and the server); "
        f"tree peak RSS {memory['rss'] / 1024:.0f} MiB PSS {memory['pss'] / 1024:.1f} MiB"
    )
    return jobs / elapsed


def _latency(database: str, samples: int) -> None:
    from robust_queue.models import Job
    from testproject import tasks

    supervisor = _start(1, polling=0.1)
    time.sleep(3)
    delays = []
    for _ in range(samples):
        result = tasks.add.enqueue(1, 1)
        while not (
            job := Job.objects.filter(result_id=result.id, started_at__isnull=False).first()
        ):
            time.sleep(0.002)
        delays.append((job.started_at - job.enqueued_at).total_seconds() * 1000)
        time.sleep(0.05)
    _stop(supervisor)
    delays.sort()
    p95 = delays[int(len(delays) * 0.95) - 1]
    print(
        f"{database:10} pickup latency, idle worker (polling 0.1 s): "
        f"p50 {statistics.median(delays):.1f} ms, p95 {p95:.1f} ms"
    )


# Threads that enqueue for ``--steady``, each paced at its share of the
# rate: one enqueue waits for its commit, which alone held one thread
# under 200 jobs/s on PostgreSQL here.
STEADY_THREADS = 4


def _steady(database: str, rate: float, seconds: float) -> None:
    """Pickup latency at a steady arrival of ``rate`` no-op jobs/s."""
    import threading

    from django.db import connection

    from robust_queue.models import Job, Process
    from testproject import tasks

    # Only this run's jobs in the table (as drain() starts): they are then
    # read whole, not by an IN list of every id, which SQLite caps.
    Job.objects.all().delete()
    supervisor = _start(2)
    while Process.objects.filter(kind="worker").count() < 2:
        time.sleep(0.05)
    time.sleep(1)
    ids: list[str] = []
    begun = time.monotonic()

    def enqueue(offset: int) -> None:
        share = rate / STEADY_THREADS
        # Paced by the schedule, not by sleeps between enqueues: a slow
        # enqueue does not lower the rate.
        for n in range(int(seconds * share)):
            due = begun + (n + offset / STEADY_THREADS) / share
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            ids.append(tasks.add.enqueue(n, offset).id)
        connection.close()

    threads = [threading.Thread(target=enqueue, args=(i,)) for i in range(STEADY_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    arrived = len(ids) / (time.monotonic() - begun)
    while Job.objects.filter(finished_at__isnull=True).exists():
        time.sleep(0.1)
    _stop(supervisor)
    delays = sorted(
        (started - enqueued).total_seconds() * 1000
        for enqueued, started in Job.objects.values_list("enqueued_at", "started_at")
        if started is not None
    )
    print(
        f"{database:10} pickup at a steady {arrived:.0f} jobs/s ({len(ids)} jobs from "
        f"{STEADY_THREADS} threads, 2x3): p50 {_at(delays, 50):.1f} ms, "
        f"p95 {_at(delays, 95):.1f} ms, p99 {_at(delays, 99):.1f} ms, max {delays[-1]:.1f} ms"
    )


def _at(values: list[float], percent: float) -> float:
    return values[min(len(values) - 1, int(len(values) * percent / 100))]


def _busy_jiffies() -> int:
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # minus idle and iowait


def _tree_memory(root: int) -> dict[str, int]:
    pids = process_tree(root)
    totals = {"rss": 0, "pss": 0}
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                key, _, rest = line.partition(":")
                if key in ("Rss", "Pss"):
                    totals[key.lower()] += int(rest.split()[0])
        except FileNotFoundError:
            continue
    return totals


if __name__ == "__main__":
    main()
