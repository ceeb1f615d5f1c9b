"""Jobs waiting on others (``robust_queue.enqueue_after``) in the admin:
"waiting on N" in the blocked list, and the parents on the job page."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ...models import Job, JobDependency
from ...models.job_dependency import WAITING_KEY

# The job page links at most this many parents.
MAX_SHOWN = 20


def blocked_key(job: Job) -> str | None:
    """The key ``job`` is blocked on (reads loaded rows); None if it is
    not blocked. ``dep:`` waits on parents, ``rate:<key>`` on a rate
    limit (``rate_waits.py``), any other on a concurrency limit."""
    blocked = getattr(job, "blocked_execution", None)
    return None if blocked is None else str(blocked.concurrency_key)


def is_waiting(job: Job) -> bool:
    """Whether ``job`` is blocked on its parents (reads loaded rows)."""
    return blocked_key(job) == WAITING_KEY


def waiting_on(job: Job) -> SafeString | None:
    """ "waiting on N job(s)" and links to the first parents, or None
    if ``job`` does not wait on others."""
    if not is_waiting(job):
        return None
    rows = JobDependency.objects.using(job._state.db).filter(job_id=job.pk)
    parents = list(rows.order_by("parent_id").values_list("parent_id", flat=True)[:MAX_SHOWN])
    count = len(parents) if len(parents) < MAX_SHOWN else rows.count()
    links = format_html_join(
        ", ",
        '<a href="{}">#{}</a>',
        ((reverse("admin:robust_queue_job_change", args=[pk]), pk) for pk in parents),
    )
    more = "…" if count > len(parents) else ""
    return format_html("{}: {}{}", waiting_label(count), links, more)


def waiting_label(count: int) -> str:
    return f"waiting on {count} job{'' if count == 1 else 's'}"


def waiting_count(job: Job) -> int:
    """How many parents ``job`` still waits on (one query)."""
    return JobDependency.objects.using(job._state.db).filter(job_id=job.pk).count()
