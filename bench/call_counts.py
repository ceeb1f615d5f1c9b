"""Exact Python calls per job on a hot path, under cProfile.

    python -m bench.call_counts postgresql worker [--jobs 500]
    python -m bench.call_counts postgresql enqueue_all [--jobs 10000]

``worker``: a worker's loop, claim 1 (with a process row, as a worker
does) and perform it. ``enqueue_all``: one call of ``--jobs`` due no-op
tasks. Counts, not times: they compare two commits exactly on a machine
whose wall clock is noisy.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from collections.abc import Callable
from typing import Any

from bench.common import throwaway_database

WARM_UP = 20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("path", choices=["worker", "enqueue_all"])
    parser.add_argument("--jobs", type=int)
    options = parser.parse_args()
    with throwaway_database(options.database):
        if options.path == "worker":
            done, calls = _worker(options.jobs or 500)
        else:
            done, calls = _enqueue_all(options.jobs or 10_000)
        print(
            f"{options.database:10} {options.path}: {done} jobs, {calls / done:,.1f} Python calls per job"
        )


def _counted(body: Callable[[], int]) -> tuple[int, int]:
    profile = cProfile.Profile()
    profile.enable()
    done = body()
    profile.disable()
    return done, pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


def _worker(jobs: int) -> tuple[int, int]:
    import robust_queue
    from robust_queue.models import ReadyExecution
    from robust_queue.running.performing import perform
    from testproject import tasks
    from tests.helpers import make_process

    process = make_process()
    robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(jobs + WARM_UP)])

    def claim() -> list:  # type: ignore[type-arg]
        return ReadyExecution.objects.claim(1, process_id=process.pk, worker_id="bench")

    for _ in range(WARM_UP):
        for row in claim():
            perform(row)

    def work_off() -> int:
        done = 0
        while rows := claim():
            for row in rows:
                perform(row)
                done += 1
        return done

    return _counted(work_off)


def _enqueue_all(jobs: int) -> tuple[int, int]:
    import robust_queue
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 2), {}) for i in range(WARM_UP)])
    calls: list[tuple[Any, tuple[int, int], dict[str, Any]]]
    calls = [(tasks.add, (i, 2), {}) for i in range(jobs)]
    return _counted(lambda: len(robust_queue.enqueue_all(calls)))


if __name__ == "__main__":
    main()
