"""One permission per admin action, on top of Django's view permission."""

from __future__ import annotations

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

APP_LABEL = "robust_queue"
VIEW = "view_job"
RETRY = "retry_job"
DISCARD = "discard_job"
RUN_NOW = "run_job_now"
PAUSE = "pause_queue"
ACTIONS = (RETRY, DISCARD, RUN_NOW, PAUSE)


def has(request: HttpRequest, codename: str) -> bool:
    return bool(request.user.has_perm(f"{APP_LABEL}.{codename}"))


def require(request: HttpRequest, codename: str) -> None:
    """Refuse the request (403) unless the user holds ``codename``."""
    if not has(request, codename):
        raise PermissionDenied


def granted(request: HttpRequest) -> dict[str, bool]:
    """The action permissions of ``request.user``, for templates."""
    return {codename: has(request, codename) for codename in ACTIONS}


def refuse_forged_action(model_admin: ModelAdmin, request: HttpRequest) -> None:
    """403 for a changelist action the user may not run.

    Django's changelist ignores an action missing from ``get_actions()``
    with a message; a forged POST should be refused instead.
    """
    action = request.POST.get("action") if request.method == "POST" else None
    if action and action not in model_admin.get_actions(request):
        raise PermissionDenied
