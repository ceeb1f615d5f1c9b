"""What every Robust Queue page (not a changelist) puts in its context.

Breadcrumbs are a list of ``(url, label)``; the last one has no url. The
template renders them as Django's own admin does on the running line:
``<ol class="breadcrumbs">`` from Django 6.0 on, ``<div>`` before.
"""

from __future__ import annotations

from typing import Any

import django
from django.contrib.admin import ModelAdmin
from django.http import HttpRequest
from django.urls import reverse

from . import permissions

Crumb = tuple[str, str]

# Django 6.1 styles ``ol.breadcrumbs`` and no longer ``div.breadcrumbs``.
OL_BREADCRUMBS = django.VERSION >= (6, 1)


def context(
    model_admin: ModelAdmin[Any],
    request: HttpRequest,
    title: str,
    crumbs: list[Crumb] | None = None,
) -> dict[str, Any]:
    """The admin's context, the title, breadcrumbs and action permissions."""
    app_url = reverse("admin:app_list", kwargs={"app_label": model_admin.opts.app_label})
    return {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "perms_granted": permissions.granted(request),
        "rq_crumbs": [(app_url, "Robust Queue"), *(crumbs or [("", title)])],
        "rq_ol_breadcrumbs": OL_BREADCRUMBS,
    }


def jobs_url(model_admin: ModelAdmin[Any], query: str = "") -> str:
    url = reverse("admin:robust_queue_job_changelist", current_app=model_admin.admin_site.name)
    return f"{url}?{query}" if query else url
