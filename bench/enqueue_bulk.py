"""Bulk enqueue: one ``enqueue_all`` call of 1k, 10k and 100k tasks.

    python -m bench.enqueue_bulk postgresql [--sizes 1000,10000,100000] [--reps 3]

Each call enqueues ``size`` due no-op tasks (``testproject.tasks.add``,
straight to ready) in autocommit mode; the jobs are deleted between calls
(not timed). Prints the median of ``--reps`` calls per size: jobs/s and
microseconds per job, the validation and encoding of the calls included,
and this process's CPU per job (less swayed by a loaded machine than wall
time; the database's share is the difference, roughly).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--reps", type=int, default=3)
    options = parser.parse_args()
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_enqueue_bulk")
    with throwaway_database(options.database):
        for size in (int(s) for s in options.sizes.split(",")):
            _measure(options.database, size, options.reps)


def _measure(database: str, size: int, reps: int) -> None:
    import robust_queue
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(100)])  # warm up
    seconds, cpu = [], []
    for _ in range(reps):
        _empty()
        calls = [(tasks.add, (i, 2), {}) for i in range(size)]
        start, cpu_start = time.perf_counter(), time.process_time()
        results = robust_queue.enqueue_all(calls)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
        assert len(results) == size
    _empty()
    median = statistics.median(seconds)
    print(
        f"{database:10} enqueue_all of {size:7,} per call: {size / median:8,.0f} jobs/s "
        f"{median / size * 1e6:7.1f} us/job, CPU {statistics.median(cpu) / size * 1e6:6.1f} "
        f"us/job (medians of {reps}, load {os.getloadavg()[0]:.1f})"
    )


def _empty() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM robust_queue_ready_execution")
        cursor.execute("DELETE FROM robust_queue_job")


if __name__ == "__main__":
    main()
