"""What every Robust Queue page (not a changelist) puts in its context.

Breadcrumbs are a list of ``(url, label)``; the last one has no url. The
template renders them as Django's own admin does on the running line:
``<ol class="breadcrumbs">`` from Django 6.0 on, ``<div>`` before.
"""

from __future__ import annotations

from typing import Any

import django
from django.http import HttpRequest
from django.urls import reverse

from . import permissions
from .jobs_context import JobsContext

Crumb = tuple[str, str]

# Django 6.1 styles ``ol.breadcrumbs`` and no longer ``div.breadcrumbs``.
OL_BREADCRUMBS = django.VERSION >= (6, 1)


def context(
    jobs: JobsContext,
    request: HttpRequest,
    title: str,
    crumbs: list[Crumb] | None = None,
) -> dict[str, Any]:
    """The admin's context, the title, breadcrumbs and action permissions."""
    app_url = reverse(
        "admin:app_list", kwargs={"app_label": jobs.opts.app_label}, current_app=jobs.site.name
    )
    return {
        **jobs.each_context(request),
        "opts": jobs.opts,
        "title": title,
        "perms_granted": permissions.granted(request),
        "rq_crumbs": [(app_url, "Robust Queue"), *(crumbs or [("", title)])],
        "rq_ol_breadcrumbs": OL_BREADCRUMBS,
    }


def task_url(task_path: str, site_name: str = "admin") -> str:
    """The page of ``task_path`` (any string: ``reverse`` quotes it)."""
    return reverse(f"{site_name}:robust_queue_task_page", args=[task_path], current_app=site_name)
