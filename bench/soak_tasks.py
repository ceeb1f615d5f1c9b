"""The tasks of ``bench.soak``: each run writes one ledger row (key,
attempt), so the soak counts the runs of every job apart from the queue's
own bookkeeping: a (key, attempt) written twice ran twice; a key without
its rows was lost."""

from __future__ import annotations

import time
from datetime import timedelta

from robust_queue import limits_concurrency, retry
from robust_queue.compat import TaskContext, task
from testproject.models import LedgerEntry


class PlannedFailure(Exception):
    """The soak's 5 % of failing attempts."""


@task()
def work(key: str) -> int:
    LedgerEntry.objects.create(key=key)
    return 1


@retry(3, backoff="fixed", wait=timedelta(seconds=2))
@task(takes_context=True)
def flaky(context: TaskContext, key: str, fails: int = 1) -> int:
    """Fails its first ``fails`` attempts; 3 attempts in all."""
    LedgerEntry.objects.create(key=key, attempt=context.attempt)
    if context.attempt <= fails:
        raise PlannedFailure(f"{key}: planned failure {context.attempt} of {fails}")
    return context.attempt


@limits_concurrency(key=lambda key, account: account, to=1)
@task()
def limited(key: str, account: str) -> int:
    """One run per account at a time, 10 ms each."""
    LedgerEntry.objects.create(key=key)
    time.sleep(0.01)
    return 1


@task()
def tick() -> int:
    """The recurring task (every 10 s)."""
    LedgerEntry.objects.create(key="tick")
    return 1
