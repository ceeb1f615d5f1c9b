"""Enqueue beside django-tasks-db 0.13, in one process, alternating.

    python -m bench.peer_enqueue postgresql [--jobs 2000] [--rounds 5]

Needs django-tasks-db installed (see ``bench.peer_settings``). Each round
enqueues ``--jobs`` no-op tasks with Robust Queue and with the peer, in
turn, in two ways: one ``enqueue()`` per call in autocommit mode, and
``--jobs`` calls inside one ``atomic()`` block. Prints each side's median
microseconds per job (wall clock) and the ratio of rates (ours / peer:
above 1 is faster), the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    try:
        import django_tasks_db  # noqa: F401
    except ImportError:
        raise SystemExit(
            "bench.peer_enqueue needs the peer: pip install django-tasks-db==0.13.0"
        ) from None
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.peer_settings"
    with throwaway_database(options.database):
        _run(options.database, options.jobs, options.rounds)


def _run(database: str, jobs: int, rounds: int) -> None:
    from django.db import transaction

    from bench import peer_tasks

    def single(task: object) -> Callable[[], None]:
        def run() -> None:
            for i in range(jobs):
                task.enqueue(i, 1)  # type: ignore[attr-defined]

        return run

    def in_atomic(task: object) -> Callable[[], None]:
        def run() -> None:
            with transaction.atomic():
                for i in range(jobs):
                    task.enqueue(i, 1)  # type: ignore[attr-defined]

        return run

    for way, make in (("enqueue() one per call", single), ("enqueue() x N in atomic()", in_atomic)):
        ours, peer = make(peer_tasks.ours), make(peer_tasks.peer)
        ours(), peer()  # warm up
        times: dict[str, list[float]] = {"ours": [], "peer": []}
        for round_ in range(rounds):
            order = (("ours", ours), ("peer", peer))
            for side, run in order if round_ % 2 == 0 else reversed(order):
                start = time.perf_counter()
                run()
                times[side].append((time.perf_counter() - start) / jobs * 1e6)
        ratio = statistics.median(p / o for o, p in zip(times["ours"], times["peer"], strict=True))
        print(
            f"{database:10} {way:28} ours {statistics.median(times['ours']):6.0f} µs/job, "
            f"django-tasks-db {statistics.median(times['peer']):6.0f} µs/job; "
            f"rate ours/peer {ratio:.2f} ({rounds} rounds of {jobs})"
        )


if __name__ == "__main__":
    main()
