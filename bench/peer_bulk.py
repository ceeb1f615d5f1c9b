"""Bulk enqueue beside procrastinate, on PostgreSQL, alternating.

    python -m bench.peer_bulk [--jobs 4000] [--rounds 5]

Needs procrastinate 3 installed (``scripts/venv.sh peers``). In one
process and one throwaway database, each round makes one call of
``--jobs`` no-op jobs with Robust Queue (``robust_queue.enqueue_all``)
and with procrastinate (``Task.batch_defer``, its schema applied to the
same database), in turn, the first side alternating; the jobs of both are
deleted between calls (not timed). Prints each side's median jobs/s and
its process's CPU per job (the rest is the server's, roughly), and the
median of the rounds' ratios of rates (ours / procrastinate: above 1 is
faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from bench.common import conninfo, require_procrastinate, throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    require_procrastinate("bench.peer_bulk")
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_peer_bulk")
    with throwaway_database("postgresql"):
        _run(options.jobs, options.rounds)


def _run(jobs: int, rounds: int) -> None:
    import procrastinate
    from django.db import connection

    import robust_queue
    from testproject import tasks

    app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=conninfo()))

    @app.task(name="add", queue="default")
    def add(a: int, b: int) -> int:
        return a + b

    def ours() -> None:
        robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(jobs)])

    def peer() -> None:
        add.batch_defer(*({"a": i, "b": 2} for i in range(jobs)))

    def empty() -> None:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM robust_queue_ready_execution")
            cursor.execute("DELETE FROM robust_queue_job")
            cursor.execute("DELETE FROM procrastinate_jobs")

    with app.open():
        app.schema_manager.apply_schema()
        sides: dict[str, Callable[[], None]] = {"ours": ours, "procrastinate": peer}
        for run in sides.values():
            run()  # warm up
            empty()
        rates: dict[str, list[float]] = {side: [] for side in sides}
        cpu: dict[str, list[float]] = {side: [] for side in sides}
        for round_ in range(rounds):
            order = list(sides.items())
            for side, run in order if round_ % 2 == 0 else reversed(order):
                start, cpu_start = time.perf_counter(), time.process_time()
                run()
                rates[side].append(jobs / (time.perf_counter() - start))
                cpu[side].append((time.process_time() - cpu_start) / jobs * 1e6)
                empty()
    ratio = statistics.median(
        o / p for o, p in zip(rates["ours"], rates["procrastinate"], strict=True)
    )
    for side in sides:
        print(
            f"postgresql bulk {jobs:,} {side:14} {statistics.median(rates[side]):8,.0f} jobs/s, "
            f"client CPU {statistics.median(cpu[side]):5.1f} us/job"
        )
    print(
        f"postgresql bulk {jobs:,}: rate ours/procrastinate {ratio:.2f} "
        f"(median of {rounds} rounds, load {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
