"""The processes page: who is alive, what each worker is running now;
quiet or stop a worker from its page (``process_commands.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from django.contrib import admin
from django.db.models import Count, Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from .. import conf
from ..models import ClaimedExecution, Process
from . import display, process_commands
from .readonly import ReadOnlyAdminMixin

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _ModelAdmin: TypeAlias = admin.ModelAdmin[Process]
else:
    _ModelAdmin = admin.ModelAdmin

RUNNING_JOBS_SHOWN = 5


def _metadata(process: Process) -> dict[str, Any]:
    """The process's metadata, or nothing if the row holds no object."""
    return process.metadata if isinstance(process.metadata, dict) else {}


class ProcessAdmin(ReadOnlyAdminMixin, _ModelAdmin):
    list_display = (
        "name",
        "kind",
        "hostname",
        "pid",
        "heartbeat",
        "queues",
        "threads",
        "running_jobs",
        "supervised_by",
        "command_state",
    )
    list_filter = ("kind", "hostname")
    search_fields = ("name", "hostname")
    ordering = ("kind", "name")
    list_per_page = 100
    # Facet counts would count each filter choice over the whole table.
    show_facets = admin.ShowFacets.NEVER
    change_form_template = "admin/robust_queue/process/change_form.html"

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(process_commands.view_for(self))
        own = [path("<path:object_id>/do/<str:verb>/", view, name="robust_queue_process_command")]
        return own + super().get_urls()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {**process_commands.buttons(self, request, object_id), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, context)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Process]:
        claims = (
            ClaimedExecution.objects.select_related("job")
            .only("process_id", "job__id", "job__task_path")
            .order_by("job_id")
        )
        threshold = conf.alive_threshold().total_seconds()
        return (
            Process.objects.using(conf.queue_database())
            .with_liveness(threshold)
            .select_related("supervisor")
            .annotate(running=Count("claimed_executions"))
            .prefetch_related(Prefetch("claimed_executions", queryset=claims))
        )

    @admin.display(description="Last heartbeat", ordering="last_heartbeat_at")
    def heartbeat(self, obj: Process) -> str:
        # Age and liveness by the database's clock (with_liveness), which
        # heartbeats are written with: this host's may be minutes off.
        age = getattr(obj, "heartbeat_age", None)
        now = obj.last_heartbeat_at + age if age is not None else None
        text = display.ago(obj.last_heartbeat_at, now=now)
        if not getattr(obj, "is_alive", True):
            return format_html(
                '<span class="rq-stale" title="Older than the alive threshold">{} · stale</span>',
                text,
            )
        return text

    @admin.display(description="Queues")
    def queues(self, obj: Process) -> str:
        value = _metadata(obj).get("queues", "")
        return display.text(", ".join(map(str, value)) if isinstance(value, list) else value)

    @admin.display(description="Threads")
    def threads(self, obj: Process) -> str:
        return display.text(_metadata(obj).get("threads", ""))

    @admin.display(description="Supervisor")
    def supervised_by(self, obj: Process) -> str:
        """The supervisor's name (not "kind name", which the column cut)."""
        supervisor = obj.supervisor
        if supervisor is None:
            return "—"
        url = reverse("admin:robust_queue_process_change", args=[supervisor.pk])
        return format_html('<a href="{}">{}</a>', url, display.text(supervisor.name))

    @admin.display(description="State")
    def command_state(self, obj: Process) -> str:
        """Quiet, stopping, or what was asked and not yet acted on."""
        return process_commands.state_badge(obj)

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
            return format_html('{} <a href="{}">and {} more</a>', links, url, running - len(claims))
        return links or "—"
