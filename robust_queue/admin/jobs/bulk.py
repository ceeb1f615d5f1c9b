"""Bulk retry / discard / run now / cancel: a confirmation page with the exact
count, then the action, in the request or (when large) on the queue, where
it runs next (``bulk_placement.py``: the page says on which queue, and how
many jobs are ahead of it).

The count is taken on the confirmation page, over the selection or the
filter, exactly up to ``COUNT_CAP`` ("1,000,000+" past it), by the same
statement that reads the highest job id among them
(``counting.capped_count_and_top``); that id then bounds the action, so
jobs that arrive after the operator said yes are left alone. Once
confirmed, the jobs are counted again (to the same cap) to decide whether
the operation runs in the request or on the queue.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from ...models import Job
from ...operations import bulk
from ...operations.counting import CappedCount, capped_count, capped_count_and_top
from .. import audit, bulk_task, pages
from ..display import number
from ..jobs_context import JobsContext
from .bulk_verbs import VERBS, Verb

__all__ = ["BACKGROUND_ABOVE", "VERBS", "handle", "number"]

# Above this many jobs an operation runs as a job on the queue, not here.
BACKGROUND_ABOVE = 5_000
# Counts stop here ("1,000,000+"): the operation itself handles them all.
# An index-only count of a million rows is well under a second
# (BENCHMARKS.md, Admin: the bulk confirmation pages).
COUNT_CAP = 1_000_000
# Up to this many jobs, each gets its own audit entry (its page shows it).
SMALL_ACTION = 50


def handle(
    jobs: JobsContext, request: HttpRequest, selected: QuerySet[Job], verb_name: str
) -> HttpResponse | None:
    """The confirmation page, or (once confirmed) the action itself."""
    verb = VERBS[verb_name]
    if request.POST.get("confirm") != "yes":
        return _confirmation(jobs, request, selected, verb)
    bound = _int(request.POST.get("max_pk"))
    selected = verb.bounded(selected, bound)
    across = request.POST.get("select_across") == "1"
    # Counted again here, not read from the form: a forged or stale count
    # must not keep a large operation in the request.
    count = capped_count(selected, COUNT_CAP)
    if across and int(count) > BACKGROUND_ABOVE:
        return _in_background(jobs, request, verb, bound, count)
    each = list(selected.values_list("pk", "task_path", "queue_name")[: SMALL_ACTION + 1])
    small = len(each) <= SMALL_ACTION
    queue = _queue_of(request, {row[2] for row in each} if small else set())
    outcome = verb.run(selected)
    _report(request, verb, outcome, [(pk, task) for pk, task, _ in each] if small else [], queue)
    return None


def _queue_of(request: HttpRequest, queues: set[str]) -> str:
    """The one queue an action is on, for its audit row: the list's queue
    filter, or the only queue of a small selection; "" if several."""
    filtered = request.GET.get("queue", "")
    if filtered:
        return filtered
    return next(iter(queues)) if len(queues) == 1 else ""


def _report(
    request: HttpRequest,
    verb: Verb,
    outcome: bulk.Outcome,
    each: list[tuple[int, str]],
    queue: str = "",
) -> None:
    """The message and the audit entries (one per job of ``each`` too)."""
    message = f"{verb.done} {number(outcome.changed)} of {number(outcome.total)} job(s)."
    if outcome.skipped:
        message += f" {number(outcome.skipped)} skipped (state changed, or locked by a worker)."
    # A small action is findable from each job's page too.
    deleted = verb.name == "discard"
    audit.record_each(
        request.user.pk, each, f"{verb.label} (bulk action): {message}", deleted=deleted
    )
    audit.record(
        request.user.pk,
        message,
        deleted=deleted,
        verb=verb.label.lower(),
        count=outcome.changed,
        queue=queue,
    )
    messages.add_message(
        request, messages.SUCCESS if outcome.changed else messages.WARNING, message
    )


def _confirmation(
    jobs: JobsContext, request: HttpRequest, selected: QuerySet[Job], verb: Verb
) -> TemplateResponse:
    top, count, blocked = _figures(selected, verb)
    across = request.POST.get("select_across") == "1"
    background = across and int(count) > BACKGROUND_ABOVE
    title = f"{verb.label}: {count} job(s)?"
    context = {
        **pages.context(jobs, request, title, [(jobs.jobs_url(), "Jobs"), ("", verb.label)]),
        "verb": verb,
        "count": int(count),
        "count_shown": str(count),
        "is_capped": count.is_capped,
        "blocked": str(blocked) if blocked else "",
        "max_pk": top,
        "across": across,
        "background": background,
        # When it would run: on which queue, behind how many jobs.
        "placement": bulk_task.placement() if background else None,
        "threshold": number(BACKGROUND_ABOVE),
        "action": request.POST.get("action", ""),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "back_url": request.get_full_path(),
    }
    return TemplateResponse(request, "admin/robust_queue/job/bulk_confirm.html", context)


def _figures(selected: QuerySet[Job], verb: Verb) -> tuple[int, CappedCount, CappedCount | None]:
    """The highest id the verb applies to among ``selected``, their capped
    count and (run now) the blocked ones."""
    if verb.less is None:
        count, top = capped_count_and_top(selected.filter(verb.applies_to), COUNT_CAP)
    else:
        less = selected.filter(verb.less)
        count, top = capped_count_and_top(selected, COUNT_CAP, less=less)
    if verb.name != "run_now":
        return top, count, None
    blocked = verb.bounded(selected, top).filter(blocked_execution__isnull=False)
    return top, count, capped_count(blocked, COUNT_CAP)


def _in_background(
    jobs: JobsContext, request: HttpRequest, verb: Verb, bound: int, count: CappedCount
) -> HttpResponse:
    user_id = int(request.user.pk or 0)
    query = request.GET.urlencode()
    job, where = bulk_task.enqueue(verb.name, query, user_id, bound, int(count), jobs.site.name)
    message = (
        f"{verb.label} of {count} job(s) runs on the queue as job #{job.pk}. "
        f"{where.sentence} Its page shows the progress."
    )
    audit.record(
        request.user.pk,
        message,
        verb=verb.label.lower(),
        count=int(count),
        queue=_queue_of(request, set()),
    )
    if where.ahead is None:
        messages.warning(request, message)
    else:
        messages.success(request, message)
    return HttpResponseRedirect(jobs.url("change", job.pk))


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
