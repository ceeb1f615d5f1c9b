"""The processes page: who is alive, what each worker is running now."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.db.models import Count, Prefetch, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince

from .. import conf
from ..models import ClaimedExecution, Process
from .readonly import ReadOnlyAdminMixin

DEFAULT_ALIVE_THRESHOLD = 300  # seconds; the supervisor prunes after this
RUNNING_JOBS_SHOWN = 5


def alive_threshold() -> timedelta:
    return timedelta(
        seconds=float(conf.setting("process_alive_threshold", DEFAULT_ALIVE_THRESHOLD))
    )


class ProcessAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "name",
        "kind",
        "hostname",
        "pid",
        "heartbeat",
        "queues",
        "threads",
        "running_jobs",
        "supervisor",
    )
    list_filter = ("kind", "hostname")
    search_fields = ("name", "hostname")
    ordering = ("kind", "name")
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[Process]:
        claims = (
            ClaimedExecution.objects.select_related("job")
            .only("process_id", "job__id", "job__task_path")
            .order_by("job_id")
        )
        return (
            Process.objects.using(conf.queue_database())
            .select_related("supervisor")
            .annotate(running=Count("claimed_executions"))
            .prefetch_related(Prefetch("claimed_executions", queryset=claims))
        )

    @admin.display(description="Last heartbeat", ordering="last_heartbeat_at")
    def heartbeat(self, obj: Process) -> str:
        age = timezone.now() - obj.last_heartbeat_at
        text = f"{timesince(obj.last_heartbeat_at)} ago"
        if age > alive_threshold():
            return format_html(
                '<span class="rq-stale" title="Older than the alive threshold">{} · stale</span>',
                text,
            )
        return text

    @admin.display(description="Queues")
    def queues(self, obj: Process) -> str:
        value = obj.metadata.get("queues", "")
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)

    @admin.display(description="Threads")
    def threads(self, obj: Process) -> str:
        return str(obj.metadata.get("threads", obj.metadata.get("thread_count", "")))

    @admin.display(description="Running now")
    def running_jobs(self, obj: Process) -> str:
        claims = list(obj.claimed_executions.all())[:RUNNING_JOBS_SHOWN]
        links = format_html_join(
            ", ",
            '<a href="{}">#{} {}</a>',
            (
                (
                    reverse("admin:robust_queue_job_change", args=[c.job_id]),
                    c.job_id,
                    c.job.task_path.rpartition(".")[2],
                )
                for c in claims
            ),
        )
        running = int(getattr(obj, "running", 0))
        if running > len(claims):
            url = reverse("admin:robust_queue_job_changelist") + f"?state=claimed&process={obj.pk}"
            return format_html(
                '{} <a href="{}">and {} more</a>', links, url, running - len(claims)
            )
        return links or "—"
