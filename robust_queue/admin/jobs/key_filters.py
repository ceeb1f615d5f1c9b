"""Filtering jobs by concurrency key or unique key, bounded and masked.

- ``?concurrency_key=<key>``: the blocked list reads the blocked table's
  key index; other lists the partial index on ``job.concurrency_key``
  (migration 0011) where the database has partial indexes, else only the
  newest ``RECENT_JOBS`` jobs (MySQL/MariaDB).
- ``?key_of=<job id>``: the jobs with the same concurrency key as that
  job, without the key in the URL (a masked key is never put in one).
- ``?rate_key_of=<job id>``: the jobs waiting on that job's rate key
  (blocked on ``rate:<key>``), through the blocked table's key index.
- ``?unique_key=<key or its hash>``: the job holding that unique key
  (``unique_keys.py``).

With masking on, a typed key whose job shows it masked matches nothing,
exactly as a key that does not exist: a filter must not confirm a guessed
secret. Such a key is reached through ``key_of`` (links) instead.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import connections
from django.db.models import QuerySet
from django.http import HttpRequest

from ...models import Job, JobState
from .. import display
from ..masking import values as masking
from . import rate_waits, unique_keys

# Where no partial index exists: how many of the newest jobs are read.
RECENT_JOBS = 10_000


def has_key_index(using: str) -> bool:
    """Whether migration 0011 gave ``job.concurrency_key`` its index."""
    return bool(connections[using].features.supports_partial_indexes)


def with_key(jobs: QuerySet[Job], key: str, state: str) -> QuerySet[Job]:
    """``jobs`` whose concurrency key is ``key``, read through an index."""
    if not key:
        return jobs.none()
    if state == JobState.BLOCKED:
        return jobs.filter(blocked_execution__concurrency_key=key)
    # "> ''" repeats the partial index's condition, so the planner uses it.
    jobs = jobs.filter(concurrency_key=key, concurrency_key__gt="")
    if has_key_index(jobs.db):
        return jobs
    newest = Job.objects.using(jobs.db).order_by("-pk").values_list("pk", flat=True)
    bound = list(newest[RECENT_JOBS - 1 : RECENT_JOBS])
    return jobs.filter(pk__gte=bound[0]) if bound else jobs


def is_shown_as_is(key: str, using: str) -> bool:
    """Whether the jobs of ``key`` show it unmasked (True when none has
    it: the filter then finds nothing anyway)."""
    if not masking.is_on():
        return True
    fields = ("task_path", "backend_alias", "arguments", "concurrency_key")
    job = next(iter(with_key(Job.objects.using(using).only(*fields), key, "").order_by()[:1]), None)
    return job is None or masking.shown_concurrency_key(job) == key


class _LinkedFilter(admin.SimpleListFilter):
    """Reached by links; shown (with its value) only when active."""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # Django applies only filters with choices: offer the active value.
        current = self.value()
        return [(current, self.label(current))] if current else []

    def label(self, value: str) -> str:
        return display.text(value)


class ConcurrencyKeyFilter(_LinkedFilter):
    title = "concurrency key"
    parameter_name = "concurrency_key"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        key = self.value()
        if not key:
            return queryset
        if not is_shown_as_is(key, queryset.db or "default"):
            return queryset.none()
        return with_key(queryset, key, str(request.GET.get("state", "")))


class KeyOfFilter(_LinkedFilter):
    title = "concurrency key"
    parameter_name = "key_of"

    def label(self, value: str) -> str:
        return f"the key of job #{display.text(value)}"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        value = self.value()
        if not value:
            return queryset
        if not display.is_id(value):
            return queryset.none()
        keys = (
            Job.objects.using(queryset.db)
            .filter(pk=int(value))
            .values_list("concurrency_key", flat=True)
        )
        key = next(iter(keys), "")
        return with_key(queryset, key, str(request.GET.get("state", "")))


class RateKeyOfFilter(_LinkedFilter):
    title = "rate key"
    parameter_name = "rate_key_of"

    def label(self, value: str) -> str:
        return f"waiting on the rate key of job #{display.text(value)}"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        value = self.value()
        if not value:
            return queryset
        key = rate_waits.waiting_on_key_of(value, queryset.db or "default")
        return with_key(queryset, key, JobState.BLOCKED)


class UniqueKeyFilter(_LinkedFilter):
    title = "unique key"
    parameter_name = "unique_key"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        value = self.value()
        if not value:
            return queryset
        result_id = unique_keys.holder(value, queryset.db or "default")
        return queryset.filter(result_id=result_id) if result_id else queryset.none()
