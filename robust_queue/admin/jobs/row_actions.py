"""Retry and Discard on each row of the failed list.

They are the job page's own actions (``job_views.action_view``: the same
permission check, the same audit entry) reached from the list, and ask as
they do there: Retry acts at once, Discard asks on a page first. Each
takes the operator back to the list they came from (``next``), its
filters, search and page kept.

The rows sit inside the changelist's form (the bulk actions'), and forms
do not nest: each Retry button submits one form outside it
(``FORM_ID``, in the list's template, with the CSRF token) to its job's
URL (``formaction``). No script: a strict CSP changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString

from ...models import Job, JobState
from .. import permissions
from ..jobs_context import JobsContext
from .filters import state_of

FORM_ID = "rq-row-form"
NEXT = "next"


def column(jobs: JobsContext, request: HttpRequest) -> Callable[[Job], str] | None:
    """The failed list's actions column for this user; None on other
    lists, or when they may neither retry nor discard."""
    if state_of(request) != JobState.FAILED or not jobs.may_view(request):
        return None
    may_retry = permissions.has(request, permissions.RETRY)
    may_discard = permissions.has(request, permissions.DISCARD)
    if not (may_retry or may_discard):
        return None
    back = urlencode({NEXT: request.get_full_path()})

    @admin.display(description="Actions")
    def row_actions(obj: Job) -> str:
        buttons: list[SafeString] = []
        if may_retry:
            buttons.append(
                format_html(
                    '<button type="submit" class="button rq-row-retry" form="{}" '
                    'formaction="{}" aria-label="Retry job #{}">Retry</button>',
                    FORM_ID,
                    jobs.named_url("robust_queue_job_action", obj.pk, "retry"),
                    obj.pk,
                )
            )
        if may_discard:
            buttons.append(
                format_html(
                    '<a class="button rq-danger rq-row-discard" href="{}?{}" '
                    'aria-label="Discard job #{}">Discard…</a>',
                    jobs.named_url("robust_queue_job_action", obj.pk, "discard"),
                    back,
                    obj.pk,
                )
            )
        return format_html('<span class="rq-row-actions">{}</span>', SafeString(" ".join(buttons)))

    return row_actions


def next_url(request: HttpRequest) -> str | None:
    """Where to go back to after a row's action: the list it came from,
    if ``next`` names a page of this site."""
    url = request.POST.get(NEXT) or request.GET.get(NEXT)
    allowed = url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return url if url and allowed else None
