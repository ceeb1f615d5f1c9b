"""Tasks with concurrency limits, retries and schedules, for the tests."""

from __future__ import annotations

import os
import time
from datetime import timedelta

from robust_queue import limits_concurrency, recurring, retry
from robust_queue.compat import TASK_TAKES_OPTIONS, TaskContext, task

from .models import LedgerEntry


def _span(label: str, sleep: float) -> str:
    """Record when a run starts and ends, so tests can measure overlap."""
    LedgerEntry.objects.create(key=f"start:{label}")
    time.sleep(sleep)
    LedgerEntry.objects.create(key=f"end:{label}")
    return label


def _meeting_span(label: str, wait: float, among: str = "") -> str:
    """A span that stays open (up to ``wait`` s) until another run has
    overlapped it: one was open when it started, or one started since.
    Runs that a limit lets overlap then do, however loaded the machine.
    ``among``: only runs whose labels start with it count (one group's)."""
    LedgerEntry.objects.create(key=f"start:{label}")
    starts = LedgerEntry.objects.filter(key__startswith=f"start:{among}")
    ends = LedgerEntry.objects.filter(key__startswith=f"end:{among}")
    seen = starts.count()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        started = starts.count()
        if started > seen or started - ends.count() >= 2:
            break
        time.sleep(0.005)
    LedgerEntry.objects.create(key=f"end:{label}")
    return label


@limits_concurrency(key=lambda account, label, sleep=0.0: account, to=2)
@task()
def limited(account: str, label: str, sleep: float = 0.0) -> str:
    return _span(label, sleep)


@limits_concurrency(key=lambda account, label, wait=0.0: account, to=2)
@task()
def limited_meeting(account: str, label: str, wait: float = 0.0) -> str:
    """``limited``, each run waiting for another to overlap it (``_meeting_span``)."""
    return _meeting_span(label, wait)


@limits_concurrency(key="one", to=1, duration=timedelta(seconds=1))
@task()
def short_lease(label: str, sleep: float = 0.0) -> str:
    return _span(label, sleep)


@limits_concurrency(key=lambda label: "x", on_conflict="discard")
@task()
def discarding(label: str) -> str:
    return _span(label, 0)


if TASK_TAKES_OPTIONS:  # not on Django 6.0

    @task(limits_concurrency={"key": lambda account, label, sleep=0.0: account, "to": 2})
    def limited_by_keyword(account: str, label: str, sleep: float = 0.0) -> str:
        """The same limit as ``limited``, declared as a @task keyword."""
        return _span(label, sleep)


@limits_concurrency(key=lambda label: "shared", group="grouped")
@task()
def grouped_a(label: str) -> str:
    return label


@limits_concurrency(key=lambda label: "shared", group="grouped")
@task()
def grouped_b(label: str) -> str:
    return label


@limits_concurrency(key=lambda value: 1 / value)
@task()
def bad_key(value: int) -> int:
    return value


@limits_concurrency(key=lambda obj: obj)
@task()
def per_object(obj: object) -> str:
    return str(obj)


@retry(attempts=3, backoff="fixed", wait=timedelta(0), retry_on=(ValueError,))
@task(takes_context=True)
def flaky(context: TaskContext, key: str, succeed_on: int = 3) -> int:
    """Fails until attempt ``succeed_on``; records every attempt."""
    LedgerEntry.objects.create(key=key, attempt=context.attempt)
    if context.attempt < succeed_on:
        raise ValueError(f"attempt {context.attempt} fails")
    return context.attempt


@retry(attempts=5, wait=timedelta(seconds=30), discard_on=(KeyError,))
@task()
def picky(kind: str) -> None:
    raise KeyError(kind) if kind == "key" else ValueError(kind)


@retry(attempts=2, backoff="fixed", wait=timedelta(0))
@task(takes_context=True)
def crashes_once(context: TaskContext, key: str, sleep: float = 30.0) -> int:
    """Sleeps on its first attempt (to be killed), succeeds on the next."""
    LedgerEntry.objects.create(key=key, attempt=context.attempt)
    if context.attempt == 1:
        time.sleep(sleep)
    return os.getpid()


def _raising_backoff(attempt: int) -> timedelta:
    raise ZeroDivisionError(f"no delay for attempt {attempt}")


def _text_backoff(attempt: int) -> timedelta:
    return "soon"  # type: ignore[return-value]


@retry(attempts=3, backoff=_raising_backoff)
@task()
def backoff_raises(key: str) -> None:
    """Fails; its retry policy's backoff raises when asked for a delay."""
    raise ValueError(f"{key} fails")


@retry(attempts=3, backoff=_text_backoff)
@task()
def backoff_returns_text(key: str) -> None:
    """Fails; its retry policy's backoff returns text, not a delay."""
    raise ValueError(f"{key} fails")


# Rare slots, so that schedulers other tests start never fire them; the
# scheduler tests pass their own "now".
@recurring("0 3 1 1 *", key="tick-new-year", args=("new-year",))
@recurring("30 4 1 7 *", key="tick-july", args=("july",), priority=5)
@task()
def tick(label: str) -> str:
    LedgerEntry.objects.create(key=f"tick:{label}")
    return label
