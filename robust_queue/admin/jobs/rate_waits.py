"""Jobs waiting on a rate limit (``robust_queue.options.rate_limits``) in the admin:
"rate limited: <key> (N per <window>)" and when the key's next window
opens, in the blocked list and on the job page, linked to the jobs that
wait on the same key (``?rate_key_of=<job id>``: a masked key is never
put in a URL). Such a job is blocked on ``rate:<key>``, as a job that
waits on others is blocked on ``dep:`` (``waiting.py``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.urls import reverse

from ...models import Job, RateLimit
from ...options.rate_limits import WAITING_PREFIX, limit_for
from .. import display
from ..masking import values as masking
from . import waiting


@dataclass(frozen=True, slots=True)
class RateWait:
    key: str  # As the admin may show it (masked like the job's arguments).
    rate: str  # "2 per 1 h"; "" when the task no longer has a rate limit.
    opens: dt.datetime | None  # When the key's next window opens, if known.
    url: str  # The blocked jobs waiting on the same key.

    @property
    def label(self) -> str:
        return f"rate limited: {self.key}" + (f" ({self.rate})" if self.rate else "")

    @property
    def opens_in(self) -> str:
        return display.ago(self.opens)


def is_rate_limited(job: Job) -> bool:
    """Whether ``job`` waits on its rate key (reads loaded rows)."""
    return (waiting.blocked_key(job) or "").startswith(WAITING_PREFIX)


def rate_wait(job: Job) -> RateWait | None:
    """What ``job`` waits for on its rate key, or None if it does not
    (one query: the key's row in the rate table, which may be gone)."""
    key = (waiting.blocked_key(job) or "").removeprefix(WAITING_PREFIX)
    if not is_rate_limited(job) or not key:
        return None
    rate = limit_for(job.declared_task())
    rows = RateLimit.objects.using(job._state.db).filter(key=key)
    opens = next(iter(rows.values_list("next_release", flat=True)), None)
    return RateWait(
        key=masking.shown_key(job, display.text(key)),
        rate=f"{rate.to} per {display.duration(rate.per)}" if rate else "",
        opens=opens,
        url=reverse("admin:robust_queue_job_changelist") + f"?state=blocked&rate_key_of={job.pk}",
    )


def waiting_on_key_of(job_id: str, using: str) -> str:
    """The blocked key (``rate:<key>``) job ``job_id`` waits on; "" if it
    waits on no rate key (or there is no such job)."""
    if not display.is_id(job_id):
        return ""
    keys = Job.objects.using(using).filter(pk=int(job_id)).values_list("rate_key", flat=True)
    key = next(iter(keys), "")
    return WAITING_PREFIX + key if key else ""
