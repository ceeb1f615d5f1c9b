"""The concurrency page: semaphores and blocked jobs per key, bounded.

Blocked jobs are grouped by key among the oldest ``BLOCKED_SAMPLE`` blocked
rows (the page says so when there are more); ``?job=<id>`` shows that job's
key alone, its semaphore and its blocked jobs read through the key indexes
(counts stop at the cap). Keys are masked like their jobs' (``key_masking``);
a masked key is never put in a URL: its links name a job instead. Jobs
over a rate limit (blocked on ``rate:<key>``) are listed apart, under
"Rate limits", with when their key's next window opens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Count, Min, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ...models import BlockedExecution, Job, RateLimit, Semaphore
from ...operations.counting import DEFAULT_COUNT_CAP, CappedCount
from ...options.rate_limits import WAITING_PREFIX
from .. import display, pages
from ..jobs_context import JobsContext
from ..masking import key_masking

# At most this many keys of each kind are listed.
KEYS_SHOWN = 200
# Blocked jobs are grouped by key among this many of the oldest.
BLOCKED_SAMPLE = 10_000


def view_for(jobs: JobsContext) -> Callable[[HttpRequest], HttpResponse]:
    def view(request: HttpRequest) -> HttpResponse:
        jobs.require_view(request)
        using = jobs.using
        job_id = str(request.GET.get("job", ""))
        key = _key_of(job_id, using) if job_id else None
        blocked, sampled = _blocked_groups(using, key)
        semaphores = _semaphores(using, key)
        keys = {row["concurrency_key"] for row in blocked} | {s.key for s in semaphores}
        shown = key_masking.shown_keys(keys, using)
        _decorate(blocked, shown)
        rated = [row for row in blocked if row["concurrency_key"].startswith(WAITING_PREFIX)]
        _add_windows(rated, using)
        context = {
            **pages.context(jobs, request, "Concurrency"),
            "semaphores": [(s, shown[s.key]) for s in semaphores],
            "blocked_keys": [row for row in blocked if row not in rated],
            "rate_keys": rated,
            "keys_shown": KEYS_SHOWN,
            "sampled": display.number(BLOCKED_SAMPLE) if sampled else "",
            "one_job": job_id,
            "one_key": shown.get(key or "", "") if key is not None else None,
        }
        return TemplateResponse(request, "admin/robust_queue/concurrency.html", context)

    return view


def _decorate(blocked: list[dict[str, Any]], shown: dict[str, str]) -> None:
    """The key as shown (masked?) and the count, grouped, on each row."""
    for row in blocked:
        row["shown_key"] = shown[row["concurrency_key"]]
        row["is_masked"] = row["shown_key"] != row["concurrency_key"]
        count = row["count"]
        row["count_shown"] = str(count) if isinstance(count, CappedCount) else display.number(count)


def _add_windows(rated: list[dict[str, Any]], using: str) -> None:
    """On each row of a rate key (``rate:<key>``): the key without its
    prefix and when its next window opens (None: no row in the rate
    table, or nothing due)."""
    keys = [row["concurrency_key"].removeprefix(WAITING_PREFIX) for row in rated]
    rows = RateLimit.objects.using(using).filter(key__in=keys)
    opens = dict(rows.values_list("key", "next_release"))
    for row, key in zip(rated, keys, strict=True):
        row["shown_key"] = row["shown_key"].removeprefix(WAITING_PREFIX)
        row["opens"] = opens.get(key)


def _semaphores(using: str, key: str | None) -> list[Semaphore]:
    rows = Semaphore.objects.using(using).order_by("key")
    return list((rows if key is None else rows.filter(key=key))[:KEYS_SHOWN])


def _key_of(job_id: str, using: str) -> str | None:
    """The concurrency key of job ``job_id``; "" if it has none (or there
    is no such job): the page then lists nothing."""
    if not display.is_id(job_id):
        return ""
    keys = Job.objects.using(using).filter(pk=int(job_id)).values_list("concurrency_key", flat=True)
    return next(iter(keys), "")


def _blocked_groups(using: str, key: str | None) -> tuple[list[dict[str, Any]], bool]:
    """Blocked jobs per key (count, oldest block, first expiry, first job),
    and whether only the oldest ``BLOCKED_SAMPLE`` were grouped."""
    rows = BlockedExecution.objects.using(using)
    if key is not None:
        return (_one_key(rows.filter(concurrency_key=key), key) if key else []), False
    newest = list(
        rows.order_by("pk").values_list("pk", flat=True)[BLOCKED_SAMPLE : BLOCKED_SAMPLE + 1]
    )
    if newest:
        rows = rows.filter(pk__lt=newest[0])
    groups = list(
        rows.values("concurrency_key")
        .annotate(
            count=Count("pk"),
            oldest=Min("created_at"),
            expires=Min("expires_at"),
            first_job=Min("job_id"),
        )
        .order_by("oldest")[:KEYS_SHOWN]
    )
    return groups, bool(newest)


def _one_key(rows: QuerySet[BlockedExecution], key: str) -> list[dict[str, Any]]:
    # Through the key's index, at most the cap's worth of rows.
    first = rows.order_by("-priority", "job_id")[: DEFAULT_COUNT_CAP + 1]
    figures = first.aggregate(
        count=Count("pk"),
        oldest=Min("created_at"),
        expires=Min("expires_at"),
        first_job=Min("job_id"),
    )
    if not figures["count"]:
        return []
    figures["count"] = CappedCount(figures["count"], DEFAULT_COUNT_CAP)
    return [{"concurrency_key": key, **figures}]
