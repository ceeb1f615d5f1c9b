"""The enqueuing process's CPU per plain job, and statements per call.

    python -m bench.enqueue_cpu postgresql [--single 2000] [--bulk 20000] [--rounds 3]

Wall-clock enqueue rates swing by half on a machine that others load;
this process's CPU time (``time.process_time``) per job swings far less,
and it is where a change to the enqueue path's Python shows. The number
of statements per call (``CaptureQueriesContext``) and of Python calls per
job (``cProfile``) are exact. Jobs are plain: no tags, no limits, no
``run_after``.
"""

from __future__ import annotations

import argparse
import cProfile
import time
from collections.abc import Callable

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--single", type=int, default=2000)
    parser.add_argument("--bulk", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _statements(options.database)
        for _ in range(options.rounds):
            _run(options)


def _statements(database: str) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    import robust_queue
    from testproject import tasks

    with CaptureQueriesContext(connection) as single:
        tasks.add.enqueue(1, 2)
    with CaptureQueriesContext(connection) as bulk:
        robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(100)])
    print(f"{database:10} statements: enqueue {len(single)}, enqueue_all x100 {len(bulk)}")
    calls = [(tasks.add, (i, 2), {}) for i in range(1000)]
    single_calls = _calls(lambda: [tasks.add.enqueue(i, 2) for i in range(100)]) / 100
    bulk_calls = _calls(lambda: robust_queue.enqueue_all(calls)) / 1000
    print(
        f"{database:10} Python calls per job: enqueue {single_calls:.0f}, "
        f"enqueue_all (chunk of 1,000) {bulk_calls:.1f}"
    )


def _calls(run: Callable[[], object]) -> int:
    profile = cProfile.Profile()
    profile.runcall(run)
    return sum(entry.callcount for entry in profile.getstats())


def _run(options: argparse.Namespace) -> None:
    import robust_queue
    from testproject import tasks

    for _ in range(50):  # warm up connections and caches
        tasks.add.enqueue(1, 2)
    cpu = time.process_time()
    for i in range(options.single):
        tasks.add.enqueue(i, 2)
    single = (time.process_time() - cpu) / options.single * 1e6
    calls = [(tasks.add, (i, 2), {}) for i in range(1000)]
    cpu = time.process_time()
    for _ in range(options.bulk // 1000):
        robust_queue.enqueue_all(calls)
    bulk = (time.process_time() - cpu) / options.bulk * 1e6
    print(
        f"{options.database:10} CPU per job: enqueue {single:6.1f} us, "
        f"enqueue_all (chunks of 1,000) {bulk:6.1f} us"
    )


if __name__ == "__main__":
    main()
