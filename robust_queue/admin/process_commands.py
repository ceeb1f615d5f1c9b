"""Quiet or stop a worker from its page, as Sidekiq's Busy page does.

The admin writes the command on the worker's row (``Process.ask``); the
worker reads it on its next heartbeat and acts (``processes/worker.py``):

- quiet: it claims no more jobs; those it runs finish; it stays alive,
  shown as quiet, until stopped. There is no un-quiet: stop it, and its
  supervisor starts a fresh worker that claims.
- stop: it stops as on TERM (running jobs get ``shutdown_timeout`` to
  finish, then go back to the queue) and exits; being a supervised child,
  it is replaced by a fresh worker unless its supervisor is stopping too.

Each asks on a page first (no script: a strict CSP cannot skip it), needs
``robust_queue.command_process`` on top of the view permission (a forged
POST gets 403), and is audited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods

from .. import conf
from ..models import Process, ProcessCommand
from . import audit, display, pages, permissions

CODENAME = "command_process"
VERBS = {
    "quiet": ("Quiet", "quiet worker"),
    "stop": ("Stop", "stop worker"),
}


def view_for(model_admin: ModelAdmin[Any]) -> Callable[..., HttpResponse]:
    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        if verb not in VERBS:
            raise Http404
        permissions.require(model_admin, request, CODENAME)
        process = _get(object_id)
        page = _url(model_admin, "change", process.pk)
        if not process.can_be_asked(verb):
            messages.warning(
                request, f"{_named(process)} cannot be asked to {verb}: {_why(process)}"
            )
            return HttpResponseRedirect(page)
        if request.method != "POST":
            return _confirmation(model_admin, request, process, verb)
        if process.ask(verb):
            message = _asked(process, verb)
            audit.record(request.user.pk, message, about=process, verb=VERBS[verb][1])
            messages.success(request, message)
        else:
            messages.warning(
                request,
                f"{_named(process)} was not asked to {verb}: it is gone or was asked "
                "to stop meanwhile.",
            )
        return HttpResponseRedirect(page)

    return view


def buttons(model_admin: ModelAdmin[Any], request: HttpRequest, object_id: str) -> dict[str, Any]:
    """The process page's state and the commands this user may send it now."""
    process = Process.objects.using(conf.queue_database()).filter(pk=_pk(object_id)).first()
    if process is None:
        return {}
    may = model_admin.has_view_permission(request) and permissions.has(request, CODENAME)
    return {
        "rq_process_state": state_badge(process),
        "rq_process_commands": [
            {"verb": verb, "label": label, "url": _url(model_admin, "command", process.pk, verb)}
            for verb, (label, _) in VERBS.items()
            if may and process.can_be_asked(verb)
        ],
        "rq_heartbeat_interval": _seconds(conf.get(conf.PROCESS_HEARTBEAT_INTERVAL)),
    }


def state_badge(process: Process) -> str:
    """The state it is in (quiet, stopping) or was asked to reach."""
    if not process.command:
        return "—"
    label = ProcessCommand(process.command).label.lower()
    return format_html(
        '<span class="rq-state rq-state-paused rq-command-{}">{}</span>', process.command, label
    )


def _confirmation(
    model_admin: ModelAdmin[Any], request: HttpRequest, process: Process, verb: str
) -> TemplateResponse:
    label = VERBS[verb][0]
    title = f"{label} {process.name}?"
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "rq_crumbs": [
            (_app_url(model_admin), "Robust Queue"),
            (_url(model_admin, "changelist"), "Processes"),
            (_url(model_admin, "change", process.pk), process.name),
            ("", label),
        ],
        "rq_ol_breadcrumbs": pages.OL_BREADCRUMBS,
        "process": process,
        "verb": verb,
        "label": label,
        "heartbeat_interval": _seconds(conf.get(conf.PROCESS_HEARTBEAT_INTERVAL)),
        "shutdown_timeout": _seconds(conf.get(conf.SHUTDOWN_TIMEOUT)),
        "running": process.claimed_executions.count(),
        "action_url": _url(model_admin, "command", process.pk, verb),
        "back_url": _url(model_admin, "change", process.pk),
    }
    return TemplateResponse(request, "admin/robust_queue/process/command.html", context)


def _asked(process: Process, verb: str) -> str:
    if verb == "quiet":
        return (
            f"Asked {_named(process)} to quiet: from its next heartbeat it claims no more "
            "jobs; those it runs finish."
        )
    return (
        f"Asked {_named(process)} to stop: at its next heartbeat it stops as on TERM and "
        "its supervisor starts a fresh worker."
    )


def _why(process: Process) -> str:
    if process.kind != "worker":
        return "only workers take commands (stop a supervisor with TERM)."
    if process.command in (ProcessCommand.STOP, ProcessCommand.STOPPING):
        return "it was asked to stop already."
    return "it is quiet already (stop it to replace it with a worker that claims)."


def _seconds(value: float) -> str:
    return f"{value:g}"


def _named(process: Process) -> str:
    return f"Worker {process.name} (pid {process.pid} on {display.text(process.hostname)})"


def _get(object_id: str) -> Process:
    if not display.is_id(object_id):
        raise Http404
    return get_object_or_404(Process.objects.using(conf.queue_database()), pk=int(object_id))


def _pk(object_id: str) -> int:
    return int(object_id) if display.is_id(object_id) else 0


def _url(model_admin: ModelAdmin[Any], name: str, *args: Any) -> str:
    site = model_admin.admin_site.name
    full = "robust_queue_process_command" if name == "command" else f"robust_queue_process_{name}"
    return reverse(f"{site}:{full}", args=args, current_app=site)


def _app_url(model_admin: ModelAdmin[Any]) -> str:
    site = model_admin.admin_site.name
    return reverse(f"{site}:app_list", kwargs={"app_label": "robust_queue"}, current_app=site)
