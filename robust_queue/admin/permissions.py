"""One permission per admin action, on top of Django's view permission."""

from __future__ import annotations

from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

APP_LABEL = "robust_queue"
VIEW = "view_job"
RETRY = "retry_job"
DISCARD = "discard_job"
RUN_NOW = "run_job_now"
PAUSE = "pause_queue"
PAUSE_TASK = "pause_task"
TOGGLE_RECURRING = "toggle_recurringtask"
CANCEL = "cancel_job"
RESCHEDULE = "reschedule_job"
EDIT = "edit_job"
ACTIONS = (
    RETRY,
    DISCARD,
    RUN_NOW,
    PAUSE,
    PAUSE_TASK,
    TOGGLE_RECURRING,
    CANCEL,
    RESCHEDULE,
    EDIT,
)


def has(request: HttpRequest, codename: str) -> bool:
    return bool(request.user.has_perm(f"{APP_LABEL}.{codename}"))


def require(model_admin: ModelAdmin[Any], request: HttpRequest, codename: str) -> None:
    """Refuse the request (403) unless the user may see ``model_admin``'s
    pages and holds ``codename``: no one acts on what they cannot see."""
    if not (model_admin.has_view_permission(request) and has(request, codename)):
        raise PermissionDenied


def granted(request: HttpRequest) -> dict[str, bool]:
    """The action permissions of ``request.user``, for templates (whose
    pages already required the view permission)."""
    return {codename: has(request, codename) for codename in ACTIONS}


def refuse_forged_action(model_admin: ModelAdmin[Any], request: HttpRequest) -> None:
    """403 for a changelist action the user may not run.

    Django's changelist ignores an action missing from ``get_actions()``
    with a message; a forged POST should be refused instead.
    """
    action = request.POST.get("action") if request.method == "POST" else None
    if action and action not in model_admin.get_actions(request):
        raise PermissionDenied
