"""Batches in the admin: a list with progress bars, and a page per batch
with its counts, properties, callbacks and jobs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypeAlias

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from .. import conf
from ..models import Batch, Job
from .readonly import ReadOnlyAdminMixin

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _ModelAdmin: TypeAlias = admin.ModelAdmin[Batch]
else:
    _ModelAdmin = admin.ModelAdmin

# The batch page lists at most this many of its jobs.
JOBS_SHOWN = 100


class BatchAdmin(ReadOnlyAdminMixin, _ModelAdmin):
    list_display = ("batch", "description", "created_at", "state", "progress_bar", "counts")
    search_fields = ("batch_id", "description")
    ordering = ("-pk",)
    list_per_page = 50
    show_facets = admin.ShowFacets.NEVER
    fields = (
        "batch_id",
        "description",
        "backend_alias",
        "created_at",
        "sealed_at",
        "completed_at",
        "state",
        "progress_bar",
        "counts",
        "properties_shown",
        "callbacks",
        "jobs",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Batch]:
        return Batch.objects.using(conf.queue_database())

    @admin.display(description="Batch", ordering="pk")
    def batch(self, obj: Batch) -> str:
        return f"#{obj.pk} {obj.batch_id[:8]}…"

    @admin.display(description="State")
    def state(self, obj: Batch) -> str:
        if obj.is_complete:
            return "complete" if obj.failed == 0 else "complete, with failures"
        return "open" if obj.sealed_at is None else "running"

    @admin.display(description="Progress")
    def progress_bar(self, obj: Batch) -> SafeString:
        progress = obj.progress()
        done = progress.succeeded + progress.failed
        percent = 100 if not progress.total else round(100 * done / progress.total)
        return format_html(
            '<progress class="rq-batch-progress" max="100" value="{}" title="{} of {} done">'
            "</progress> {}%",
            percent,
            done,
            progress.total,
            percent,
        )

    @admin.display(description="Jobs: total / pending / succeeded / failed")
    def counts(self, obj: Batch) -> str:
        p = obj.progress()
        return f"{p.total} / {p.pending} / {p.succeeded} / {p.failed}"

    @admin.display(description="Properties")
    def properties_shown(self, obj: Batch) -> SafeString:
        return format_html("<pre>{}</pre>", json.dumps(obj.properties, indent=2, default=str))

    @admin.display(description="Callbacks")
    def callbacks(self, obj: Batch) -> str:
        named = [
            f"{name}: {path}"
            for name, path in (
                ("on_success", obj.on_success),
                ("on_failure", obj.on_failure),
                ("on_finish", obj.on_finish),
            )
            if path
        ]
        return "; ".join(named) or "—"

    @admin.display(description="Jobs")
    def jobs(self, obj: Batch) -> SafeString:
        rows = (
            Job.objects.using(obj._state.db)
            .with_executions()
            .filter(batch_member__batch=obj)
            .order_by("pk")[:JOBS_SHOWN]
        )
        links = format_html_join(
            "",
            '<li><a href="{}">#{} {}</a> — {}</li>',
            (
                (
                    reverse("admin:robust_queue_job_change", args=[job.pk]),
                    job.pk,
                    job.task_path,
                    _state(job),
                )
                for job in rows
            ),
        )
        return format_html('<ul id="rq-batch-jobs">{}</ul>', links)


def _state(job: Job) -> str:
    try:
        return str(job.state.label)
    except LookupError:
        return "—"
