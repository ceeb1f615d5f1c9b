"""What recording statistics adds to the worker's hot path, in-process.

    python -m bench.statistics_cost postgresql [--jobs 1000] [--rounds 3]

Claims and performs ``--jobs`` no-op jobs per round (claims of 3, as
``bench.worker_cpu``), alternating rounds with statistics kept in memory
and flushed as a worker does, and rounds with recording switched off, in
one process; prints this process's CPU per job of each, and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _run(options.database, options.jobs, options.rounds)


def _round(jobs: int, record: bool) -> float:
    import robust_queue
    from robust_queue.models import ReadyExecution
    from robust_queue.models.statistics import recorder
    from robust_queue.running.performing import perform
    from testproject import tasks

    robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(jobs)])
    off = mock.patch("robust_queue.models.claimed_execution.record_attempt", new=_not_recorded)
    recorder.start_buffering()
    if not record:
        off.start()
    cpu = time.process_time()
    while rows := ReadyExecution.objects.claim(3, process_id=None, worker_id="bench"):
        for row in rows:
            perform(row)
        recorder.flush_if_due()
    recorder.stop_buffering()
    cpu = time.process_time() - cpu
    if not record:
        off.stop()
    return cpu / jobs * 1000


def _run(database: str, jobs: int, rounds: int) -> None:
    _round(jobs // 4, True)  # warm-up
    on, off = [], []
    for _ in range(rounds):
        on.append(_round(jobs, True))
        off.append(_round(jobs, False))
    print(
        f"{database:10} worker loop CPU per job, statistics on: "
        f"{', '.join(f'{v:.3f}' for v in on)} ms; off: {', '.join(f'{v:.3f}' for v in off)} ms; "
        f"median ratio {statistics.median(on) / statistics.median(off):.3f}"
    )


def _not_recorded(*args: object, **kwargs: object) -> None:
    """Statistics off: a plain function (a mock's call costs far more than
    the recording it stands for)."""


if __name__ == "__main__":
    main()
