"""Claim throughput of plain jobs while a rate-limited key is saturated.

    python -m bench.rate_limit_claims postgresql [--jobs 3000] [--rounds 3]

Claims (batches of 10, then finishes) ``--jobs`` plain jobs three times
per round: alone ("quiet"); while two threads keep enqueueing plain jobs
on another queue and a third polls the rate limits' release, as a
dispatcher does ("busy, plain": the control); and while the two threads
enqueue jobs of one hot rate-limited key instead (2 per hour: every
enqueue takes the key's row lock and waits in line) ("busy, hot key").
The threads share this process's GIL and the machine's cores, so "busy"
is slower than "quiet" either way; a lock every claim waited on would
make "hot key" slower than "plain".
"""

from __future__ import annotations

import argparse
import threading
import time

from bench.common import throwaway_database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["sqlite", "postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with throwaway_database(options.database):
        for _ in range(options.rounds):
            quiet = _claim_rate(options.jobs, load=None)
            plain = _claim_rate(options.jobs, load="plain")
            hot = _claim_rate(options.jobs, load="hot")
            print(
                f"{options.database:10} claims: quiet {quiet:5.0f} jobs/s, busy plain "
                f"{plain:5.0f} jobs/s, busy hot key {hot:5.0f} jobs/s "
                f"(hot/plain {hot / plain:.2f})"
            )


def _claim_rate(jobs: int, *, load: str | None) -> float:
    import robust_queue
    from robust_queue.models import Process, ProcessKind, RateLimit, ReadyExecution
    from robust_queue.running.performing import perform
    from testproject import coordination_tasks, tasks

    robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(jobs)])
    process = Process.objects.create(
        kind=ProcessKind.WORKER, name=f"bench-{load}-{time.time()}", pid=1, hostname="bench"
    )
    stop = threading.Event()
    if load == "hot":
        task, args = coordination_tasks.rated.using(queue_name="hot"), ("hot",)
    else:
        task, args = tasks.add.using(queue_name="other"), (1, 1)
    helpers = [threading.Thread(target=_enqueue, args=(stop, task, args)) for _ in range(2)]
    helpers.append(threading.Thread(target=_release, args=(stop, RateLimit)))
    if load:
        for thread in helpers:
            thread.start()
        time.sleep(0.5)
    claimed = 0
    start = time.perf_counter()
    while claimed < jobs:
        rows = ReadyExecution.objects.claim(
            10, process_id=process.pk, worker_id=process.name, queue_name="default"
        )
        for row in rows:
            perform(row)
        claimed += len(rows)
    elapsed = time.perf_counter() - start
    stop.set()
    if load:
        for thread in helpers:
            thread.join()
    return jobs / elapsed


def _enqueue(stop: threading.Event, task: object, args: tuple[object, ...]) -> None:
    from django.db import connections

    while not stop.is_set():
        task.enqueue(*args)  # type: ignore[attr-defined]
    connections.close_all()


def _release(stop: threading.Event, rate_limit: object) -> None:
    from django.db import connections

    while not stop.is_set():
        rate_limit.objects.release_due()  # type: ignore[attr-defined]
        time.sleep(0.01)
    connections.close_all()


if __name__ == "__main__":
    main()
