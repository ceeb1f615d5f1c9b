"""The jobs list's tag filter (``robust_queue.options.tagging``).

Choices are the tags of the newest tag rows, never a DISTINCT over the
table; a tag reached by a link (the job page) is offered too. Filtering
joins the tag table through its (tag, job) index.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ...models import Job, JobTag

RECENT_TAG_ROWS = 1000


class TagFilter(admin.SimpleListFilter):
    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        tags = JobTag.objects.using(model_admin.using).recent_tags(RECENT_TAG_ROWS)
        if self.value():
            tags.add(str(self.value()))
        return [(tag, tag) for tag in sorted(tags)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> QuerySet[Job]:
        if not self.value():
            return queryset
        # (job, tag) is unique: the join yields each job once.
        return queryset.filter(tags__tag=self.value())
