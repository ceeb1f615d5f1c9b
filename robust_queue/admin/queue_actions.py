"""The queue actions page: every operator's actions in one place.

Django's "Recent actions" lists the current user's own; this page lists
everyone's (``QueueAction`` rows, written by ``audit.record``): who, which
action, how many jobs, on which queue, when, newest first, filtered by
user, action and queue. It needs ``robust_queue.view_queueaction`` ("Can
view queue action"; superusers hold it): staff who may see the jobs but
not it get 403.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from .. import conf
from ..models import QueueAction
from . import display
from .counting import CappedPaginator
from .readonly import ReadOnlyAdminMixin

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _ModelAdmin: TypeAlias = admin.ModelAdmin[QueueAction]
else:
    _ModelAdmin = admin.ModelAdmin


class QueueActionAdmin(ReadOnlyAdminMixin, _ModelAdmin):
    list_display = ("when", "who", "action", "jobs", "queue", "what")
    list_display_links = None
    list_filter = (
        ("username", admin.AllValuesFieldListFilter),
        ("verb", admin.AllValuesFieldListFilter),
        ("queue_name", admin.AllValuesFieldListFilter),
    )
    search_fields = ("message",)
    search_help_text = "Search the actions' descriptions (job ids, task paths, keys)."
    # Newest first, the primary key's order: no other sort.
    ordering = ("-pk",)
    sortable_by = ()
    paginator = CappedPaginator
    show_facets = admin.ShowFacets.NEVER
    show_full_result_count = False
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[QueueAction]:
        return QueueAction.objects.using(conf.queue_database()).all()

    @admin.display(description="When")
    def when(self, obj: QueueAction) -> str:
        exact = timezone.localtime(obj.action_time).strftime("%Y-%m-%d %H:%M:%S")
        return format_html(
            '<time datetime="{}" title="{}">{}</time>',
            obj.action_time.isoformat(),
            exact,
            display.ago(obj.action_time),
        )

    @admin.display(description="Who")
    def who(self, obj: QueueAction) -> str:
        return obj.username

    @admin.display(description="Action")
    def action(self, obj: QueueAction) -> str:
        return obj.verb

    @admin.display(description="What")
    def what(self, obj: QueueAction) -> str:
        return display.text(obj.message)

    @admin.display(description="Jobs")
    def jobs(self, obj: QueueAction) -> str:
        if obj.count is None:
            return "—"
        if obj.job_id is not None and obj.count == 1:
            url = reverse("admin:robust_queue_job_change", args=[obj.job_id])
            return format_html('<a href="{}">#{}</a>', url, obj.job_id)
        return display.number(obj.count)

    @admin.display(description="Queue")
    def queue(self, obj: QueueAction) -> str:
        if not obj.queue_name:
            return "—"
        url = reverse("admin:robust_queue_job_changelist")
        query = urlencode({"queue": obj.queue_name})
        return format_html('<a href="{}?{}">{}</a>', url, query, obj.queue_name)
