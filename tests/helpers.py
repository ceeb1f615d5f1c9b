"""Shared test helpers: claiming and running jobs, waiting for conditions."""

from __future__ import annotations

import time
from collections.abc import Callable

from robust_queue.models import ClaimedExecution, Process, ProcessKind, ReadyExecution
from robust_queue.performing import perform

WORKER_ID = "test-worker"


def make_process(name: str = "test-worker", using: str = "default") -> Process:
    return Process.objects.using(using).create(
        kind=ProcessKind.WORKER, name=name, pid=1, hostname="test"
    )


def claim(
    limit: int = 100,
    *,
    process: Process | None = None,
    using: str = "default",
    worker_id: str = WORKER_ID,
    queue_name: str | None = None,
) -> list[ClaimedExecution]:
    return ReadyExecution.objects.using(using).claim(
        limit,
        process_id=process.pk if process else None,
        worker_id=worker_id,
        queue_name=queue_name,
    )


def work_off(using: str = "default", limit: int = 100) -> int:
    """Claim and perform ready jobs until none are left; return how many."""
    done = 0
    while True:
        claimed = claim(limit, using=using)
        if not claimed:
            return done
        for row in claimed:
            perform(row)
            done += 1


def wait_until(
    predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.05
) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def run_in_threads(targets: list[Callable[[], object]], timeout: float = 120) -> list[object]:
    """Run each target in its own thread (own DB connection); return results.

    The first exception a thread raised is re-raised here. A thread still
    running ``timeout`` seconds after the start fails the test (its daemon
    thread is left behind rather than hanging the run).
    """
    import threading

    from django.db import connections

    results: list[object] = [None] * len(targets)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = targets[index]()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(targets))]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    alive = [index for index, thread in enumerate(threads) if thread.is_alive()]
    if alive:
        raise AssertionError(f"threads {alive} still running after {timeout}s")
    if errors:
        raise errors[0]
    return results
