"""Shared test helpers: claiming and running jobs, waiting for conditions."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from django.db import OperationalError

from robust_queue.models import ClaimedExecution, Process, ProcessKind, ReadyExecution
from robust_queue.models.sql import dialect_for
from robust_queue.running.performing import perform

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


@contextmanager
def cancel_requested_before_the_take(claimed: ClaimedExecution) -> Iterator[list[str]]:
    """Store a cancel request for ``claimed`` just before the next DELETE of
    claims runs on this connection: after any earlier read of the request,
    as a cancel committed at that moment would be. Yields the statements it
    went before (one, once it fired)."""
    from django.db import connection
    from django.utils import timezone

    table = ClaimedExecution._meta.db_table
    fired: list[str] = []

    def wrapper(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if not fired and sql.startswith("DELETE") and table in sql:
            fired.append(sql)
            requested = ClaimedExecution.objects.filter(pk=claimed.pk)
            requested.update(cancel_requested_at=timezone.now())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield fired


def answer_lost(method: str, *, once: bool = False) -> Any:
    """Patch the dialect's ``method`` to run for real, then raise as a
    dropped connection would after the commit; ``once``: only the first
    call raises (a retry then runs as it is)."""
    kind = type(dialect_for("default"))
    real: Callable[..., Any] = getattr(kind, method)
    calls: list[None] = []

    def lost(self: Any, *args: Any, **kwargs: Any) -> Any:
        outcome = real(self, *args, **kwargs)
        if once and calls:
            return outcome
        calls.append(None)
        raise OperationalError("server closed the connection unexpectedly")

    return mock.patch.object(kind, method, lost)
