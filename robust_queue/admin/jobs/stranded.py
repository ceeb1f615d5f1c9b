"""The stranded jobs page: queued jobs whose task path no task declares (a
renamed or moved task), and moving the waiting ones to a declared task.

``stranded/`` lists each such path with its counts, the recurring tasks
that name one, and (with ``change_job``) a "move to task X" form, X
preselected when a declared task looks like the one the path became. The
move asks first, on a page with the exact count (GET ``stranded/move/``),
then rewrites the task path of the waiting jobs in one transaction (POST,
``operations.stranded.move``) and writes an audit entry. The overview
links here when there are any. A POST without the permission is a 403.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from ...exceptions import InvalidTaskPathError, UnknownTaskError
from ...models import RecurringTask
from ...operations import stranded
from .. import audit, display, pages, permissions
from ..jobs_context import JobsContext

# Moving stranded jobs rewrites job rows: Django's change permission on jobs.
MOVE = "change_job"
# Up to this many jobs, each gets its own audit entry (its page shows it).
SMALL_MOVE = 50
TITLE = "Stranded jobs"


def may_move(request: HttpRequest) -> bool:
    """Whether the user may move stranded jobs (with the view permission,
    which every page here requires)."""
    return permissions.has(request, MOVE)


def list_view(jobs: JobsContext) -> Callable[[HttpRequest], HttpResponse]:
    """GET ``stranded/``: the paths, their counts and the move forms."""

    def view(request: HttpRequest) -> HttpResponse:
        jobs.require_view(request)
        using = jobs.using
        targets = stranded.task_paths()
        rows = [
            {
                "path": path,
                "suggested": stranded.suggestion(path.task_path, targets),
                "jobs_query": urlencode({"task": path.task_path}),
            }
            for path in stranded.stranded_jobs(using)
        ]
        recurring = _recurring(jobs, stranded.stranded_recurring(using), using)
        context = {
            **pages.context(jobs, request, TITLE, [(jobs.jobs_url(), "Jobs"), ("", TITLE)]),
            "rows": rows,
            "recurring": recurring,
            "targets": targets,
            "may_move": may_move(request),
            "move_url": jobs.named_url("robust_queue_stranded_move"),
        }
        return TemplateResponse(request, "admin/robust_queue/stranded.html", context)

    return view


def move_view(jobs: JobsContext) -> Callable[[HttpRequest], HttpResponse]:
    """GET ``stranded/move/?task=old&to=new``: the confirmation page with
    the exact count; POST (``task``, ``to``): the move. Both need
    ``change_job``; a bad path or target goes back to the list with why."""

    def view(request: HttpRequest) -> HttpResponse:
        jobs.require(request, MOVE)
        data = request.POST if request.method == "POST" else request.GET
        task_path, to_path = data.get("task", ""), data.get("to", "")
        back = jobs.named_url("robust_queue_stranded")
        try:
            stranded.check_move(task_path, to_path)
        except (UnknownTaskError, InvalidTaskPathError) as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(back)
        if request.method != "POST":
            return _confirmation(jobs, request, task_path, to_path)
        using = jobs.using
        each = list(
            stranded.waiting_jobs(using, task_path).values_list("pk", flat=True)[: SMALL_MOVE + 1]
        )
        try:
            moved = stranded.move(using, task_path, to_path)
        except (UnknownTaskError, InvalidTaskPathError) as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(back)
        message = (
            f"Moved {display.number(moved)} waiting job(s) of {display.text(task_path)} "
            f"to task {display.text(to_path)}."
        )
        if moved and len(each) <= SMALL_MOVE:
            audit.record_each(request.user.pk, [(pk, to_path) for pk in each], message)
        audit.record(request.user.pk, message)
        messages.add_message(request, messages.SUCCESS if moved else messages.WARNING, message)
        return HttpResponseRedirect(back)

    return view


def _confirmation(
    jobs: JobsContext, request: HttpRequest, task_path: str, to_path: str
) -> TemplateResponse:
    using = jobs.using
    count = stranded.waiting_jobs(using, task_path).count()
    title = f"Move {display.number(count)} job(s) to task {display.text(to_path)}?"
    crumbs = [
        (jobs.jobs_url(), "Jobs"),
        (jobs.named_url("robust_queue_stranded"), TITLE),
        ("", "Move"),
    ]
    context = {
        **pages.context(jobs, request, title, crumbs),
        "task_path": task_path,
        "to_path": to_path,
        "count": count,
        "count_shown": display.number(count),
        "move_url": jobs.named_url("robust_queue_stranded_move"),
        "back_url": jobs.named_url("robust_queue_stranded"),
    }
    return TemplateResponse(request, "admin/robust_queue/stranded_move.html", context)


def _recurring(
    jobs: JobsContext, found: dict[str, list[str]], using: str
) -> list[tuple[str, list[tuple[str, str]]]]:
    # Per path, (key, its admin page) of each recurring task naming it.
    keys = [key for each in found.values() for key in each]
    rows = RecurringTask.objects.using(using).filter(key__in=keys).values_list("key", "pk")
    pks = dict(rows) if keys else {}
    opts = RecurringTask._meta
    name = f"{opts.app_label}_{opts.model_name}_change"
    return [
        (path, [(key, jobs.named_url(name, pks[key]) if key in pks else "") for key in each])
        for path, each in found.items()
    ]
