"""Enqueue throughput, single and bulk, on one database.

    python -m bench.enqueue postgresql [--single 2000] [--bulk 20000] [--chunk 1000]

Prints one line per measurement: jobs/s and microseconds per job.
"""

from __future__ import annotations

import argparse
import time

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--single", type=int, default=2000)
    parser.add_argument("--bulk", type=int, default=20000)
    parser.add_argument("--chunk", type=int, default=1000)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _run(options)


def _run(options: argparse.Namespace) -> None:
    import robust_queue
    from testproject import tasks

    for _ in range(50):  # warm up connections and caches
        tasks.add.enqueue(1, 2)
    start = time.perf_counter()
    for i in range(options.single):
        tasks.add.enqueue(i, 2)
    _report(options.database, "enqueue (one per call)", options.single, start)

    calls = [(tasks.add, (i, 2), {}) for i in range(options.chunk)]
    start = time.perf_counter()
    for _ in range(options.bulk // options.chunk):
        robust_queue.enqueue_all(calls)
    _report(options.database, f"enqueue_all (chunks of {options.chunk})", options.bulk, start)


def _report(database: str, what: str, count: int, start: float) -> None:
    elapsed = time.perf_counter() - start
    print(
        f"{database:10} {what:32} {count:7d} jobs  "
        f"{count / elapsed:9.0f} jobs/s  {elapsed / count * 1e6:8.1f} us/job"
    )


if __name__ == "__main__":
    main()
