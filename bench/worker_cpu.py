"""The worker's own CPU per no-op job, in-process: claim 3, perform each.

    python -m bench.worker_cpu postgresql [--jobs 2000]

No supervisor, no threads: this isolates the Python cost of the hot path
(claim, perform, finalize) from the database server's.
"""

from __future__ import annotations

import argparse
import time

from bench.common import setup_django, teardown_django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=2000)
    options = parser.parse_args()
    setup_django(options.database)
    try:
        _run(options.database, options.jobs)
    finally:
        teardown_django()


def _run(database: str, jobs: int) -> None:
    import robust_queue
    from robust_queue.models import ReadyExecution
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(jobs)])
    wall, cpu = time.perf_counter(), time.process_time()
    while rows := ReadyExecution.objects.claim(3, process_id=None, worker_id="bench"):
        for row in rows:
            row.perform()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{database:10} worker loop: {wall / jobs * 1000:.2f} ms wall, "
          f"{cpu / jobs * 1000:.2f} ms CPU per no-op job")


if __name__ == "__main__":
    main()
