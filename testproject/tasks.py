"""Example tasks for the demo and the test suite."""

from __future__ import annotations

import asyncio
import time

from django.db import transaction

from robust_queue.compat import TaskContext, task

from .models import LedgerEntry


@task()
def add(a: int, b: int) -> int:
    return a + b


@task(priority=10, queue_name="reports")
def report(n: int) -> dict:
    return {"report": n, "rows": list(range(n))}


@task()
async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


@task()
def fail(message: str = "boom") -> None:
    raise ValueError(message)


@task(takes_context=True)
def with_context(context: TaskContext, value: str) -> dict:
    return {
        "attempt": context.attempt,
        "result_id": context.task_result.id,
        "value": value,
    }


@task()
def returns_set() -> set:
    return {1, 2}


@task()
def echo(*args: object, **kwargs: object) -> dict:
    return {"args": [repr(a) for a in args], "kwargs": {k: repr(v) for k, v in kwargs.items()}}


@task()
def record(key: str, sleep: float = 0.0) -> str:
    """Write one ledger row per run, so tests can prove exactly-once."""
    if sleep:
        time.sleep(sleep)
    LedgerEntry.objects.create(key=key)
    return key


@task()
def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@task()
def timed_sleep(seconds: float) -> list[float]:
    """Sleep; return when the body started and ended (wall clock)."""
    started = time.time()
    time.sleep(seconds)
    return [started, time.time()]


not_a_task = add.func


# Time limits and cancellation (robust_queue.options.time_limits, .cancellation).
from datetime import timedelta  # noqa: E402

from robust_queue import cancel_requested, retry, time_limit  # noqa: E402
from robust_queue.compat import TASK_TAKES_OPTIONS  # noqa: E402


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@time_limit(0.5)
@task()
def spin_limited(key: str, seconds: float = 30.0) -> str:
    """Loops in Python past its limit; writes a row only if never stopped."""
    LedgerEntry.objects.create(key=f"{key}:start")
    _spin(seconds)
    LedgerEntry.objects.create(key=f"{key}:end")
    return key


if TASK_TAKES_OPTIONS:  # not on Django 6.0

    @task(time_limit=timedelta(seconds=0.5))
    def spin_limited_by_keyword(seconds: float = 30.0) -> None:
        _spin(seconds)


@retry(2, backoff="fixed", wait=timedelta(0))
@time_limit(0.5)
@task()
def spin_limited_retried(key: str, seconds: float = 30.0) -> None:
    LedgerEntry.objects.create(key=key)
    _spin(seconds)


@time_limit(1)
@task()
def sleep_limited(key: str, seconds: float = 60.0) -> str:
    """Blocked in C (time.sleep) past its limit: only the hard path ends it."""
    LedgerEntry.objects.create(key=f"{key}:start")
    time.sleep(seconds)
    LedgerEntry.objects.create(key=f"{key}:end")
    return key


@time_limit(1)
@task()
async def async_sleep_limited(key: str, seconds: float = 60.0) -> str:
    """Awaits past its limit: cancelled in its event loop."""
    await LedgerEntry.objects.acreate(key=f"{key}:start")
    await asyncio.sleep(seconds)
    await LedgerEntry.objects.acreate(key=f"{key}:end")
    return key


@time_limit(0.5)
@task()
async def async_catching(key: str) -> str:
    """Catches its cancellation and returns: stopped all the same."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        await LedgerEntry.objects.acreate(key=f"{key}:caught")
    return key


@task()
async def async_sleep(key: str, seconds: float = 60.0) -> str:
    """Awaits with no limit (for cancel)."""
    await LedgerEntry.objects.acreate(key=f"{key}:start")
    await asyncio.sleep(seconds)
    await LedgerEntry.objects.acreate(key=f"{key}:end")
    return key


@task()
def spin_swallowing(seconds: float = 30.0) -> str:
    """Catches everything, even the interrupt: only the hard path ends it."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            _spin(0.01)
        except BaseException:  # noqa: BLE001, S110 - this task misbehaves on purpose
            pass
    return "done"


@task()
def swallows_interrupt(key: str, seconds: float = 60.0) -> str:
    """Catches the interrupt once, then returns at once as if it had
    finished."""
    LedgerEntry.objects.create(key=f"{key}:start")
    try:
        _spin(seconds)
    except BaseException:  # noqa: BLE001, S110 - this task misbehaves on purpose
        pass
    return key


@task(takes_context=True)
def cooperative(context: TaskContext, key: str, seconds: float = 60.0) -> str:
    """Stops as soon as it is asked to cancel."""
    LedgerEntry.objects.create(key=f"{key}:start")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cancel_requested(context):
            LedgerEntry.objects.create(key=f"{key}:stopped")
            return "stopped"
        time.sleep(0.05)
    return "ran out"


@task()
def uncooperative(key: str, seconds: float = 60.0) -> str:
    """Never looks at cancel requests; loops in Python."""
    LedgerEntry.objects.create(key=f"{key}:start")
    _spin(seconds)
    LedgerEntry.objects.create(key=f"{key}:end")
    return key


@time_limit(0.3)
@task()
def query_loop_limited(key: str) -> None:
    """Past its limit while always inside a query or a transaction: the
    interrupt lands anywhere in the database code."""
    while True:
        with transaction.atomic():
            LedgerEntry.objects.create(key=key)
            LedgerEntry.objects.filter(key=key).count()


@time_limit(0.2)
@task()
def cleanup_fails_after_limit() -> None:
    """Its cleanup raises while the interrupt unwinds it, as a driver's
    does when the interrupt cut a COMMIT short."""
    try:
        _spin(30)
    finally:
        raise RuntimeError("cleanup broke while stopping")


@time_limit(0.2)
@task()
def spin_around_limit(seconds: float) -> float:
    """Ends just before or just after its limit: races the interrupt."""
    _spin(seconds)
    return seconds


@retry(3, backoff="fixed", wait=timedelta(0))
@task()
def retried_sleeper(key: str, seconds: float = 60.0) -> str:
    """Retried on any failure; runs long without a time limit."""
    LedgerEntry.objects.create(key=key)
    time.sleep(seconds)
    return key


@task(takes_context=True)
def with_metadata(context: TaskContext) -> dict:
    """Returns the job's metadata (robust_queue.metadata)."""
    import robust_queue  # noqa: PLC0415 - keeps the module's imports lazy

    return robust_queue.metadata(context)


@task()
def stop_inside_a_write(key: str) -> None:
    """Writes ``key`` and stops this whole process (SIGSTOP) before the
    transaction ends: a worker wedged inside a write. On SQLite it holds
    the database's one write lock until it ends."""
    import signal  # noqa: PLC0415 - as above
    import threading  # noqa: PLC0415

    with transaction.atomic():
        LedgerEntry.objects.create(key=key)
        # At this thread: sent to the process, another thread may take the
        # signal, and this one could commit before the whole process stops.
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
        time.sleep(120)
