"""Enabling and disabling a recurring task from the admin.

Its own permission (``toggle_recurringtask``) on top of the view
permission; each change writes a ``LogEntry`` on the recurring task.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from ... import conf
from ...models import RecurringTask
from .. import audit, permissions

VERBS = {"enable": True, "disable": False}


def switch(request: HttpRequest, recurring_task: RecurringTask, enabled: bool) -> None:
    """Enable or disable one task, with its message and audit entry."""
    changed = recurring_task.enable() if enabled else recurring_task.disable()
    done = "enabled" if enabled else "disabled"
    # Django's message template capitalises the first letter: the key
    # (case matters) never comes first.
    if not changed:
        messages.info(request, f"Recurring task {recurring_task.key} was already {done}.")
        return
    audit.record(
        request.user.pk, f"Recurring task {recurring_task.key} {done}.", about=recurring_task
    )
    messages.success(request, f"Recurring task {recurring_task.key}: {done}.")


def button(recurring_task: RecurringTask, back: str = "changelist") -> str:
    """A submit button for the admin's form around it (list or page)."""
    verb = "disable" if recurring_task.enabled else "enable"
    url = reverse("admin:robust_queue_recurringtask_switch", args=[recurring_task.pk, verb])
    return format_html(
        '<button type="submit" class="button rq-switch" formaction="{}?back={}" '
        'formmethod="post">{}</button>',
        url,
        back,
        verb.capitalize(),
    )


def view_for(model_admin: admin.ModelAdmin[RecurringTask]) -> Callable[..., HttpResponse]:
    """POST ``<pk>/schedule/<enable|disable>/``; 403 without the permission."""

    @require_POST
    def view(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
        if verb not in VERBS:
            raise Http404
        permissions.require(model_admin, request, permissions.TOGGLE_RECURRING)
        recurring_task = get_object_or_404(
            RecurringTask.objects.using(conf.queue_database()), pk=pk
        )
        switch(request, recurring_task, VERBS[verb])
        if request.GET.get("back") == "change":
            return HttpResponseRedirect(
                reverse("admin:robust_queue_recurringtask_change", args=[pk])
            )
        return HttpResponseRedirect(reverse("admin:robust_queue_recurringtask_changelist"))

    return view
