"""Unique tasks (``@unique``, ``@task(unique=...)``), for the tests."""

from __future__ import annotations

from datetime import timedelta

from robust_queue import limits_concurrency, unique
from robust_queue.compat import TASK_TAKES_OPTIONS, task


@unique()
@task()
def by_arguments(n: int, label: str = "") -> int:
    """Unique per arguments while waiting or running."""
    return n


@unique(key=lambda account, n=0: account)
@task()
def per_account(account: str, n: int = 0) -> int:
    return n


@unique(key="report", within=timedelta(minutes=10))
@task()
def within_ten_minutes(n: int) -> int:
    """Counts also for ten minutes after it finished."""
    return n


@unique(key="waiting", states=("ready", "scheduled", "blocked"))
@task()
def while_waiting(n: int) -> int:
    """Counts only until a worker starts it."""
    return n


@unique(
    key="failing",
    states=("ready", "scheduled", "blocked", "running", "failed"),
    within=timedelta(hours=1),
)
@task()
def failing(n: int) -> None:
    """Counts for an hour after it failed, not after it succeeded."""
    raise ValueError(f"failing {n}")


@unique(key=lambda n: n)
@limits_concurrency(key="slot", on_conflict="discard")
@task()
def unique_and_discarding(n: int) -> int:
    return n


@task()
def plain(n: int) -> int:
    return n


if TASK_TAKES_OPTIONS:  # not on Django 6.0

    @task(unique={"key": lambda n: n % 2})
    def by_keyword(n: int) -> int:
        """Unique per parity, declared as a @task keyword."""
        return n

    @task(unique=True)
    def by_keyword_default(n: int) -> int:
        return n
