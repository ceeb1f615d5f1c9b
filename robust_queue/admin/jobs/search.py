"""The job lists' search, bounded: it never reads a big table through.

A term is tried, in order, as a result id (unique index), as a unique key
(its hash's unique index), then as part of a task path: among the paths
Robust Queue knows (declared tasks, the statistics' totals, the newest
jobs), whose jobs are read through the task path index. In the failed list
the term is also looked for in the error (exception class, message and
traceback) among the newest ``RECENT_FAILURES`` failures only. With
masking on, the error is searched as the admin shows it, masked
(``masking.error_text``): a search must not confirm a secret the page hides.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from ...models import Job, JobState, Statistic
from ...models.job import RESULT_ID_MAX_LENGTH
from ...options import discovery
from ..dashboard.stats import RECENT_FAILURES, recent_failures_bound
from ..display import number, text
from ..masking import values as masking
from ..masking.json_text import KeyText
from . import unique_keys

# The newest jobs whose task paths count as known.
RECENT_JOBS = 1000
HELP = (
    "A result id, a unique key, or part of a task path; in the failed list, "
    "part of the task path or of the error (exception class, message or "
    f"traceback, as shown) among the newest {number(RECENT_FAILURES)} failures."
)


def search(jobs: QuerySet[Job], term: str, state: str) -> QuerySet[Job]:
    """``jobs`` that match ``term`` (see the module docstring)."""
    using = jobs.db or "default"
    if len(term) <= RESULT_ID_MAX_LENGTH and jobs.filter(result_id=term).exists():
        return jobs.filter(result_id=term)
    holder = unique_keys.holder(term, using)
    if holder is not None:
        return jobs.filter(result_id=holder)
    if state == JobState.FAILED:
        return in_recent_failures(jobs, term, using)
    return jobs.filter(task_path__in=sorted(matching_task_paths(term, using)))


def matching_task_paths(term: str, using: str) -> set[str]:
    """The known task paths that contain ``term``, and ``term`` itself."""
    paths = {task.module_path for task in discovery.discover().tasks()}
    totals = Statistic.objects.using(using).totals().values_list("task_path", flat=True)
    paths.update(totals.distinct())
    newest = Job.objects.using(using).order_by("-pk").values_list("task_path", flat=True)
    paths.update(newest[:RECENT_JOBS])
    return {path for path in paths if term in path} | {term}


def in_recent_failures(jobs: QuerySet[Job], term: str, using: str) -> QuerySet[Job]:
    """``jobs`` among the newest ``RECENT_FAILURES`` failures whose task
    path or error contains ``term``: at most that many rows are read."""
    oldest_searched = recent_failures_bound(using)
    if oldest_searched is not None:
        jobs = jobs.filter(failed_execution__pk__gte=oldest_searched)
    matches = Q(task_path__contains=term) | Q(
        failed_execution__error__exception_class_path__icontains=term
    )
    in_error = Q(failed_execution__error__traceback__icontains=term)
    if not masking.is_on():
        return jobs.filter(matches | in_error)
    return jobs.filter(matches | Q(pk__in=_shown_errors_containing(jobs.filter(in_error), term)))


def _shown_errors_containing(candidates: QuerySet[Job], term: str) -> list[int]:
    """Ids of ``candidates`` (whose stored error contains ``term``) whose
    error, masked as the admin shows it, still does."""
    rows = (
        candidates.order_by()
        .select_related(None)
        .only("task_path", "backend_alias", "arguments")
        .annotate(rq_search_traceback=KeyText("traceback", "failed_execution__error"))
    )
    wanted = term.lower()
    shown = masking.error_texts((job, text(job.rq_search_traceback)) for job in rows)
    return [job.pk for job, error in shown if wanted in error.lower()]
