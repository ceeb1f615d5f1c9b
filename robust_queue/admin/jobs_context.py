"""What the jobs admin's pages need of ``JobAdmin``: the queue's database,
the admin site, the view check and the URLs.

``JobAdmin`` (``jobs.py``) builds one and hands it to its views (the job
page, the bulk and one-job actions, the overview, the concurrency and
task pages, task pauses); they never import ``jobs.py``, not even for
type checking, so the admin has no import circle. This module imports
nothing of the views.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse

from . import permissions

if TYPE_CHECKING:
    from django.contrib.admin import AdminSite
    from django.db.models.options import Options

    from ..models import Job


@dataclass(frozen=True)
class JobsContext:
    site: AdminSite
    opts: Options[Job]
    # ``JobAdmin.has_view_permission``: every page needs it, every action too.
    may_view: Callable[[HttpRequest], bool]
    # Read at each use, as settings are.
    database: Callable[[], str]

    @property
    def using(self) -> str:
        """The alias of the queue's database."""
        return self.database()

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        """The admin site's own context (its header, its apps, ...)."""
        return self.site.each_context(request)

    def require_view(self, request: HttpRequest) -> None:
        """403 unless the user may see the jobs."""
        if not self.may_view(request):
            raise PermissionDenied

    def require(self, request: HttpRequest, codename: str) -> None:
        """403 unless the user may see the jobs and holds ``codename``: no
        one acts on what they cannot see."""
        if not (self.may_view(request) and permissions.has(request, codename)):
            raise PermissionDenied

    def url(self, name: str, *args: Any) -> str:
        """The URL of the jobs admin's view ``name`` (``changelist``,
        ``change``, ``action``, ...) on this site."""
        return self.named_url(f"{self.opts.app_label}_{self.opts.model_name}_{name}", *args)

    def named_url(self, name: str, *args: Any) -> str:
        """The URL of the admin URL named ``name`` (``robust_queue_overview``,
        ...) on this site."""
        return reverse(f"admin:{name}", args=args, current_app=self.site.name)

    def jobs_url(self, query: str = "") -> str:
        """The jobs list, filtered by ``query`` (a query string)."""
        url = self.url("changelist")
        return f"{url}?{query}" if query else url
