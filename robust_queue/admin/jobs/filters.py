"""Changelist filters for jobs; none of them counts or scans the job table."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db import connections
from django.db.models import ExpressionWrapper, QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform
from django.http import HttpRequest
from django.utils import timezone

from ...models import Job, JobState
from ...models.job_state import EXECUTION_ACCESSORS
from ...models.sql import failure_search
from ...operations import queue_names
from .. import display
from ..dashboard import stats

# Filter choices come from the newest jobs (plus live queues), not DISTINCT
# over the whole table.
RECENT_JOBS_FOR_CHOICES = 1000
PERIODS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}


def state_of(request: HttpRequest) -> str:
    return str(request.GET.get(StateFilter.parameter_name, ""))


def filter_by_state(jobs: QuerySet[Job], state: str) -> QuerySet[Job]:
    if state == JobState.FINISHED:
        return jobs.filter(finished_at__isnull=False)
    accessor = EXECUTION_ACCESSORS.get(JobState(state)) if state in JobState.values else None
    if accessor is None:
        raise IncorrectLookupParameters(f"Unknown state {state!r}")
    return jobs.filter(**{f"{accessor}__isnull": False})


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(JobState.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        state = self.value()
        return filter_by_state(queryset, state) if state else queryset


class _RecentValuesFilter(admin.SimpleListFilter):
    field = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        recent = model_admin.get_queryset(request).order_by("-pk")
        values = set(recent.values_list(self.field, flat=True)[:RECENT_JOBS_FOR_CHOICES])
        values |= self.extra_values(model_admin.using)
        if self.value():
            values.add(self.value())
        return [(value, value) for value in sorted(values)]

    def extra_values(self, using: str) -> set[str]:
        return set()

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        if not self.value():
            return queryset
        return queryset.filter(**{self.field: self.value()})


class QueueFilter(_RecentValuesFilter):
    title = "queue"
    parameter_name = "queue"
    field = "queue_name"

    def extra_values(self, using: str) -> set[str]:
        return {display.text(name) for name in queue_names.known(using)}


class TaskFilter(_RecentValuesFilter):
    title = "task"
    parameter_name = "task"
    field = "task_path"


class PeriodFilter(admin.SimpleListFilter):
    """When the job reached its state (enqueued, for live states)."""

    title = "time"
    parameter_name = "period"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("1h", "Last hour"), ("24h", "Last 24 hours"), ("7d", "Last 7 days")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        if not self.value():
            return queryset
        period = PERIODS.get(str(self.value()))
        if period is None:
            raise IncorrectLookupParameters(f"Unknown period {self.value()!r}")
        since = timezone.now() - period
        return queryset.filter(**{f"{_timestamp_field(state_of(request))}__gte": since})


def _timestamp_field(state: str) -> str:
    if state == JobState.FINISHED:
        return "finished_at"
    if state == JobState.FAILED:
        return "failed_execution__created_at"
    return "enqueued_at"


class ExceptionFilter(admin.SimpleListFilter):
    title = "exception"
    parameter_name = "exception"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        if state_of(request) != JobState.FAILED and not self.value():
            return []
        names = set(stats.exception_classes(model_admin.using))
        current = self.value()
        if current:
            names.add(current)
        return [(name, name.rpartition(".")[2] or name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        if not self.value():
            return queryset
        return of_exception(queryset, str(self.value()))


def of_exception(jobs: QuerySet[Job], name: str) -> QuerySet[Job]:
    """The failed ``jobs`` whose exception class path is ``name``, through
    the ``(class, id)`` index of migration 0024: PostgreSQL's is on the
    JSON text itself; MariaDB's on a generated column, which the query
    names (the column holds the first 255 characters: a longer name is
    checked on the JSON text as well)."""
    # As text: PostgreSQL's index is on this expression.
    exception = ExpressionWrapper(
        KeyTextTransform("exception_class_path", "failed_execution__error"),
        output_field=TextField(),
    )
    using = jobs.db or "default"
    if connections[using].vendor != "mysql" or not failure_search.has_class_index(using):
        return jobs.alias(rq_exception=exception).filter(rq_exception=name)
    column = failure_search.ExceptionClassColumn("failed_execution__error")
    jobs = jobs.alias(rq_exception_column=column).filter(
        rq_exception_column=name[: failure_search.CLASS_LENGTH]
    )
    if len(name) > failure_search.CLASS_LENGTH:
        jobs = jobs.alias(rq_exception=exception).filter(rq_exception=name)
    return jobs


class _HiddenFilter(admin.SimpleListFilter):
    """A filter reached by links (process, key); shown only when active."""

    field = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # Django applies only filters with choices: offer the active value.
        current = self.value()
        return [(current, current)] if current else []

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        if not self.value():
            return queryset
        try:
            return queryset.filter(**{self.field: self.value()})
        except (TypeError, ValueError) as exc:
            raise IncorrectLookupParameters(str(exc)) from exc


class ProcessFilter(_HiddenFilter):
    title = "process"
    parameter_name = "process"
    field = "claimed_execution__process_id"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        # The database, not Python, would choke on an id past bigint.
        if self.value() and not display.is_id(self.value()):
            raise IncorrectLookupParameters(f"Not a process id: {self.value()!r}")
        return super().queryset(request, queryset)
