"""Concurrency keys on the concurrency page, masked like their jobs.

A key is built from a job's arguments, so it may hold a value the mask
hides. Each key shown is checked against one job that has it: a blocked
one (found through the blocked table's key index) or a running one (the
claimed table is small). A key with neither has its value part hidden.
The key itself is masked, not the job's concurrency key: a blocked job's
key may be its rate key (``rate:<key>``).
"""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import Min

from ...models import BlockedExecution, ClaimedExecution, Job
from .. import display
from . import values as masking


def shown_keys(keys: Collection[str], using: str) -> dict[str, str]:
    """Each of ``keys`` as the admin may show it."""
    if not masking.is_on():
        return {key: key for key in keys}
    jobs = _one_job_per_key(set(keys), using)
    return {
        key: (
            masking.shown_key(jobs[key], display.text(key))
            if key in jobs
            else masking.hidden_key_value(key)
        )
        for key in keys
    }


def _one_job_per_key(keys: set[str], using: str) -> dict[str, Job]:
    if not keys:
        return {}
    blocked = (
        BlockedExecution.objects.using(using)
        .filter(concurrency_key__in=keys)
        .values("concurrency_key")
        .annotate(job=Min("job_id"))
        .order_by()
    )
    ids = {row["concurrency_key"]: row["job"] for row in blocked}
    missing = keys - set(ids)
    if missing:
        running = ClaimedExecution.objects.using(using).filter(job__concurrency_key__in=missing)
        ids.update(running.values_list("job__concurrency_key", "job_id"))
    jobs = Job.objects.using(using).only(
        "task_path", "backend_alias", "arguments", "concurrency_key"
    )
    by_id = jobs.in_bulk(list(ids.values()))
    return {key: by_id[pk] for key, pk in ids.items() if pk in by_id}
