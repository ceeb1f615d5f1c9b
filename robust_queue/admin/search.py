"""The job lists' search, bounded: it never reads a big table through.

A term is tried, in order, as a result id (unique index), as a unique key
(its hash's unique index), then as part of a task path: among the paths
Robust Queue knows (declared tasks, the statistics' totals, the newest
jobs), whose jobs are read through the task path index. In the failed list
the term is also looked for in the error (exception class, and traceback
unless masking is on: a search must not confirm a secret the page hides)
among the newest ``RECENT_FAILURES`` failures only.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from .. import discovery
from ..models import Job, JobState, Statistic
from ..models.job import RESULT_ID_MAX_LENGTH
from . import masking, unique_keys
from .display import number
from .stats import RECENT_FAILURES, recent_failures_bound

# The newest jobs whose task paths count as known.
RECENT_JOBS = 1000
HELP = (
    "A result id, a unique key, or part of a task path; in the failed list, "
    "part of the task path or of the error (exception class, and the "
    f"traceback unless masking is on) among the newest {number(RECENT_FAILURES)} "
    "failures."
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
    matches = Q(task_path__contains=term) | Q(
        failed_execution__error__exception_class_path__icontains=term
    )
    if not masking.is_on():
        matches |= Q(failed_execution__error__traceback__icontains=term)
    if oldest_searched is not None:
        matches &= Q(failed_execution__pk__gte=oldest_searched)
    return jobs.filter(matches)
