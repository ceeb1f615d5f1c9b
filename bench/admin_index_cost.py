"""What the admin's index on ``job.enqueued_at`` (migration 0011) costs
every enqueue: the plain path, timed with and without the index.

    ROBUST_QUEUE_DB_SUFFIX=_mine python -m bench.admin_index_cost postgresql \\
        [--rounds 6] [--single 500] [--bulk 10000]

Rounds alternate (index dropped, index present) on one throw-away database
so that load on a shared machine hits both alike; prints each round and
the median µs/job of each side.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import throwaway_database

INDEX = "rq_job_enqueued"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--single", type=int, default=500)
    parser.add_argument("--bulk", type=int, default=10_000)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _run(options)


def _run(options: argparse.Namespace) -> None:
    from testproject import tasks

    for _ in range(50):  # warm up connections and caches
        tasks.add.enqueue(1, 2)
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for round_ in range(options.rounds * 2):
        with_index = round_ % 2 == 1
        _index(with_index)
        single, bulk = _single(options.single), _bulk(options.bulk)
        results[with_index].append((single, bulk))
        print(
            f"round {round_ + 1:2d} index={'yes' if with_index else 'no ':3}  "
            f"single {single:8.1f} us/job  enqueue_all {bulk:7.1f} us/job"
        )
    for label, single_index in (("single", 0), ("enqueue_all", 1)):
        without = statistics.median(r[single_index] for r in results[False])
        with_ = statistics.median(r[single_index] for r in results[True])
        print(
            f"{label:12} median without {without:8.1f} us/job, with {with_:8.1f} us/job, "
            f"ratio {with_ / without:.3f}"
        )


def _index(present: bool) -> None:
    from django.db import connection

    from robust_queue.models import Job

    with connection.schema_editor() as editor:
        index = next(i for i in Job._meta.indexes if i.name == INDEX)
        existing = connection.introspection.get_constraints(connection.cursor(), "robust_queue_job")
        if present and INDEX not in existing:
            editor.add_index(Job, index)
        elif not present and INDEX in existing:
            editor.remove_index(Job, index)


def _single(count: int) -> float:
    from testproject import tasks

    start = time.perf_counter()
    for i in range(count):
        tasks.add.enqueue(i, 2)
    return (time.perf_counter() - start) / count * 1e6


def _bulk(count: int, chunk: int = 1000) -> float:
    import robust_queue
    from testproject import tasks

    calls = [(tasks.add, (i, 2), {}) for i in range(chunk)]
    start = time.perf_counter()
    for _ in range(count // chunk):
        robust_queue.enqueue_all(calls)
    return (time.perf_counter() - start) / count * 1e6


if __name__ == "__main__":
    main()
