"""Tasks for the coordination features (snooze, tags, retention, rate
limits), for the tests. Workers started by process tests find them through
``ROBUST_QUEUE["task_modules"]``."""

from __future__ import annotations

from datetime import timedelta

from robust_queue import Snooze, limits_concurrency, rate_limit, retain, retry, tags, unique
from robust_queue.compat import TASK_TAKES_OPTIONS, TaskContext, task

from .models import LedgerEntry

# Seconds of back-off each failed attempt of snooze_then_fail was given,
# by the attempt number the retry policy was asked about.
BACKOFF_ASKED: list[int] = []


def _recorded_backoff(attempt: int) -> timedelta:
    BACKOFF_ASKED.append(attempt)
    return timedelta(0)


@task(takes_context=True)
def snoozer(context: TaskContext, key: str, times: int = 1, delay: float = 60.0) -> int:
    """Snoozes on its first ``times`` runs, then returns the attempt."""
    LedgerEntry.objects.create(key=key, attempt=context.attempt)
    if context.attempt <= times:
        raise Snooze(delay)
    return context.attempt


@task()
def snooze_by(delay: object) -> None:
    """Raises ``Snooze(delay)`` whatever ``delay`` is (bad ones too)."""
    raise Snooze(delay)  # type: ignore[arg-type]


@retry(attempts=2, backoff=_recorded_backoff)
@task(takes_context=True)
def snooze_then_fail(context: TaskContext, key: str, snoozes: int = 2) -> None:
    """Snoozes ``snoozes`` times (no delay), then fails on every run."""
    LedgerEntry.objects.create(key=key, attempt=context.attempt)
    if context.attempt <= snoozes:
        raise Snooze(0)
    raise ValueError(f"attempt {context.attempt} fails")


@limits_concurrency(key=lambda key: "snoozing", to=1)
@task(takes_context=True)
def limited_snoozer(context: TaskContext, key: str) -> int:
    """Snoozes its first run for a minute, holding a concurrency key."""
    LedgerEntry.objects.create(key=key, attempt=context.attempt)
    if context.attempt == 1:
        raise Snooze(timedelta(minutes=1))
    return context.attempt


@tags("billing", "eu")
@task()
def tagged(n: int) -> int:
    return n


@unique()
@tags("once")
@task()
def tagged_unique(n: int) -> int:
    return n


@limits_concurrency(key=lambda n: "tag-discard", on_conflict="discard")
@tags("dropped")
@task()
def tagged_discarding(n: int) -> int:
    return n


if TASK_TAKES_OPTIONS:  # not on Django 6.0

    @task(tags=["by-keyword"])
    def tagged_by_keyword() -> None:
        pass


@retain(finished=timedelta(days=30))
@task()
def kept_a_month(n: int) -> int:
    """Finished jobs kept 30 days; failed ones as the global setting says."""
    return n


@retain(finished=timedelta(hours=1), failed=None)
@task()
def kept_an_hour(fail: bool = False) -> None:
    """Finished jobs cleared after an hour; failed ones kept."""
    if fail:
        raise ValueError("kept")


@rate_limit(to=2, per=timedelta(hours=1), key=lambda account, n=0: account)
@task()
def rated(account: str, n: int = 0) -> int:
    """Two jobs per account and hour."""
    return n


@rate_limit(to=1, per=timedelta(hours=1))
@limits_concurrency(key="rated-and-limited", to=1)
@task()
def rated_and_limited(n: int) -> int:
    """One job an hour, one at a time."""
    return n


@rate_limit(to=2, per=timedelta(seconds=2))
@task()
def rated_per_two_seconds(n: int) -> list[float]:
    """Two jobs per 2-second window; returns when its body started and ended."""
    import time  # noqa: PLC0415

    started = time.time()
    return [started, time.time()]


@rate_limit(to=1, per=timedelta(hours=1), key=lambda value: 1 / value)
@task()
def rated_bad_key(value: int) -> None:
    pass
