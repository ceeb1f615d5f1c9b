"""Tasks of fair groups, for the fair-group tests and benchmark."""

from __future__ import annotations

import time
from datetime import timedelta

from robust_queue import fair_group, retry
from robust_queue.compat import TASK_TAKES_OPTIONS, task

from .control_tasks import _meeting_span


@fair_group(lambda tenant, *args, **kwargs: tenant)
@task(queue_name="tenants")
def tenant_job(tenant: str | None, n: int = 0) -> int:
    return n


@fair_group(lambda tenant, *args, **kwargs: tenant, cap=2)
@task(queue_name="tenants")
def capped_tenant_job(tenant: str, label: str = "", wait: float = 0.0) -> str:
    """Records its span (``control_tasks._meeting_span``), labelled
    ``<tenant>-...``: the cap tests measure how many of a group ran at once."""
    # Met by a run of its own group only: the other group's runs starting
    # would end it before its group reached the cap (CI once saw 1 of 2).
    return _meeting_span(label, wait, among=f"{tenant}-") if label else tenant


@retry(2, backoff="fixed", wait=timedelta(0))
@fair_group("retried")
@task(queue_name="tenants")
def failing_tenant_job() -> None:
    raise RuntimeError("boom")


@task(queue_name="tenants")
def ungrouped_job(n: int = 0) -> int:
    return n


if TASK_TAKES_OPTIONS:  # not on Django 6.0

    @task(queue_name="tenants", fair_group={"key": "by-keyword", "cap": 3})
    def grouped_by_keyword() -> None:
        """A fair group declared as a @task keyword."""


@fair_group(lambda tenant, *args, **kwargs: tenant)
@task(queue_name="tenants")
def tenant_sleep(tenant: str, seconds: float) -> str:
    """A grouped job that takes ``seconds``: a backlog that lasts."""
    time.sleep(seconds)
    return tenant
