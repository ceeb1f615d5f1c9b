"""The job lists' search, bounded: it never reads a big table through.

A term is tried, in order, as a result id (unique index), as a unique key
(its hash's unique index), then as part of a task path: among the paths
Robust Queue knows (declared tasks, the statistics' totals, the newest
jobs), whose jobs are read through the task path index. In the failed list
the term is also looked for in the error (exception class, message and
traceback) of every failure, through the error-text index of migration
0024 (``models/sql/failure_search.py``: a trigram index on PostgreSQL, a
full-text one on MariaDB). Where no index serves the term (SQLite, a term
the index cannot use, PostgreSQL without ``pg_trgm``) only the newest
``RECENT_FAILURES`` failures are searched, and the page says so.

Through the index, the newest matches are collected (the list's count cap
and one more; ``MASKED_CHECK`` and one more with masking on), and the list
shows those, saying so when more exist. The index serves a rare term, but
neither planner can tell a frequent one (tracebacks are too wide for
PostgreSQL's statistics; MariaDB's full-text search fetches every match
whatever else bounds the query) and would read every match before
sorting: the newest ``PROBE_WINDOW`` failures are read first, each row's
text (a frequent term ends there); then a query through the index counts
candidates up to what is wanted; with fewer, one query through the index
reads the rest; with more, windows of failed execution ids are walked
newest first, reading each row's text (twice as wide each time, each query
stopping at what is still wanted; ``FIRST_WINDOW`` ids first), up to
``WALK_LIMIT`` ids, and the index serves the rest. With masking on, the
error is searched as the admin shows it, masked (``masking.error_text``):
a search must not confirm a secret the page hides; the newest
``MASKED_CHECK`` failures whose stored error contains the term are
checked so.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connections
from django.db.models import BooleanField, Max, Min, Q, QuerySet
from django.db.models.expressions import RawSQL

from ...models import FailedExecution, Job, JobState, Statistic
from ...models.job import RESULT_ID_MAX_LENGTH
from ...models.sql import failure_search
from ...operations import counting
from ...options import discovery
from ..dashboard import stats
from ..display import number, text
from ..masking import values as masking
from ..masking.json_text import KeyText
from . import unique_keys

# The newest jobs whose task paths count as known.
RECENT_JOBS = 1000
# With masking on, the newest failures whose stored error contains the
# term that are masked (in Python) to check that the page shows it: about
# 0.15 ms each, so that a frequent term stays under a second at 10M jobs
# (BENCHMARKS.md, "Admin at 10M jobs").
MASKED_CHECK = 1_000
# The newest failed execution ids read for matches before the index is
# asked how frequent the term is: a term in one failure of four ends there
# (MariaDB at 10M jobs: 40 ms; its index's count of such a term, 270-450
# ms); a term in none costs this many rows' text (90 ms).
PROBE_WINDOW = 5_000
# The first window of failed execution ids read for matches past the
# probe, newest first; each next window is twice as wide.
FIRST_WINDOW = 50_000
# The ids walked (each row's text read) before the index serves the older
# rest.
WALK_LIMIT = 150_000
HELP = (
    "A result id, a unique key, or part of a task path; in the failed list, "
    "part of the task path or of the error (exception class, message or "
    "traceback, as shown) of any failure."
)


@dataclass(frozen=True, slots=True)
class Found:
    """The jobs a search matched, and what the page says about its reach."""

    jobs: QuerySet[Job]
    note: str = ""


def search(jobs: QuerySet[Job], term: str, state: str) -> Found:
    """``jobs`` that match ``term`` (see the module docstring)."""
    using = jobs.db or "default"
    if len(term) <= RESULT_ID_MAX_LENGTH and jobs.filter(result_id=term).exists():
        return Found(jobs.filter(result_id=term))
    holder = unique_keys.holder(term, using)
    if holder is not None:
        return Found(jobs.filter(result_id=holder))
    if state == JobState.FAILED:
        return in_failures(jobs, term, using)
    return Found(jobs.filter(task_path__in=sorted(matching_task_paths(term, using))))


def matching_task_paths(term: str, using: str) -> set[str]:
    """The known task paths that contain ``term``, and ``term`` itself."""
    return _known_paths_containing(term, using) | {term}


def _known_paths_containing(term: str, using: str) -> set[str]:
    paths = {task.module_path for task in discovery.discover().tasks()}
    totals = Statistic.objects.using(using).totals().values_list("task_path", flat=True)
    paths.update(totals.distinct())
    newest = Job.objects.using(using).order_by("-pk").values_list("task_path", flat=True)
    paths.update(newest[:RECENT_JOBS])
    return {path for path in paths if term in path}


def in_failures(jobs: QuerySet[Job], term: str, using: str) -> Found:
    """Failed ``jobs`` whose task path or error contains ``term``: through
    the error-text index where it serves the term (the newest matches,
    ``_newest_matching``), else among the newest ``RECENT_FAILURES``
    failures only (the note says so and why)."""
    vendor = connections[using].vendor
    if failure_search.has_index(using) and failure_search.usable_term(vendor, term):
        paths = _known_paths_containing(term, using)
        newest = stats.recent_failures_bound(using) or 0
        if masking.is_on():
            return _masked(jobs, term, newest, paths)
        cap = counting.DEFAULT_COUNT_CAP
        ids, more = _newest_up_to(jobs, term, newest, cap)
        note = (
            f"Showing the newest {number(cap)} failures whose error contains the term; "
            "there are more."
            if more
            else ""
        )
        return Found(jobs.filter(_one_of(ids, using) | Q(task_path__in=sorted(paths))), note)
    return _in_recent_failures(jobs, term, using, failure_search.why_not(vendor))


def _one_of(ids: list[int], using: str) -> Q:
    """Jobs whose id is one of ``ids`` (up to the count cap): on PostgreSQL
    one array parameter, which the list's count and pages read in a tenth
    of the time of as many parameters."""
    if connections[using].vendor != "postgresql" or not ids:
        return Q(pk__in=ids)
    table = connections[using].ops.quote_name(Job._meta.db_table)
    return Q(RawSQL(f"{table}.id = ANY(%s)", [ids], output_field=BooleanField()))


def _newest_up_to(
    candidates: QuerySet[Job], term: str, newest: int, limit: int
) -> tuple[list[int], bool]:
    """The ids of the newest ``limit`` matches, and whether there are more."""
    ids = _newest_matching(candidates, term, newest, limit + 1)
    return ids[:limit], len(ids) > limit


def _newest_matching(candidates: QuerySet[Job], term: str, newest: int, wanted: int) -> list[int]:
    """The ids of the newest ``wanted`` ``candidates`` whose error contains
    ``term``, newest failure first (module docstring)."""
    using = candidates.db or "default"
    ends = FailedExecution.objects.using(using).aggregate(top=Max("pk"), bottom=Min("pk"))
    if ends["top"] is None:
        return []

    def window(start: int, below: int, indexed: bool) -> list[int]:
        matching = failure_search.error_contains(using, "failed_execution", term, newest, indexed)
        rows = candidates.filter(
            matching, failed_execution__pk__gte=start, failed_execution__pk__lt=below
        ).order_by("-failed_execution__pk")
        return list(rows.values_list("pk", flat=True)[: wanted - len(ids)])

    # The newest ids first, each row's text read: a frequent term fills
    # what is wanted there, without asking the index how frequent it is.
    ids: list[int] = []
    below = ends["top"] + 1
    start = max(below - PROBE_WINDOW, ends["bottom"])
    ids.extend(window(start, below, indexed=False))
    below, width = start, FIRST_WINDOW
    if len(ids) < wanted and below > ends["bottom"]:
        if not failure_search.has_matches(using, term, wanted):
            # A rare term: the older rest through the index, at once.
            ids.extend(window(ends["bottom"], below, indexed=True))
            return ids
    while below > ends["bottom"] and len(ids) < wanted:
        start = max(below - width, ends["bottom"])
        indexed = ends["top"] + 1 - below >= WALK_LIMIT
        if indexed:
            start = ends["bottom"]  # the older rest, through the index
        ids.extend(window(start, below, indexed))
        below, width = start, width * 2
    return ids


def _in_recent_failures(jobs: QuerySet[Job], term: str, using: str, why: str) -> Found:
    oldest_searched = stats.recent_failures_bound(using)
    note = ""
    if oldest_searched is not None:
        jobs = jobs.filter(failed_execution__pk__gte=oldest_searched)
        note = (
            f"Searched the task path and error of the newest {number(stats.RECENT_FAILURES)} "
            f"failures only: {why}."
        )
    matches = Q(task_path__contains=term) | Q(
        failed_execution__error__exception_class_path__icontains=term
    )
    in_error = Q(failed_execution__error__traceback__icontains=term)
    if not masking.is_on():
        return Found(jobs.filter(matches | in_error), note)
    shown = _shown_errors_containing(jobs.filter(in_error), term)
    return Found(jobs.filter(matches | Q(pk__in=shown)), note)


def _masked(jobs: QuerySet[Job], term: str, newest: int, paths: set[str]) -> Found:
    """``jobs`` of ``paths`` and those of the newest ``MASKED_CHECK``
    whose stored error contains ``term`` and whose error, masked as shown,
    still contains it."""
    ids, more = _newest_up_to(jobs, term, newest, MASKED_CHECK)
    note = (
        f"The error text was matched as shown (secrets masked) in the newest "
        f"{number(MASKED_CHECK)} failures whose stored error contains the term."
        if more
        else ""
    )
    shown = _shown_errors_containing(jobs.filter(pk__in=ids), term)
    return Found(jobs.filter(Q(pk__in=shown) | Q(task_path__in=sorted(paths))), note)


def _shown_errors_containing(candidates: QuerySet[Job], term: str) -> list[int]:
    """Ids of ``candidates`` (whose stored error contains ``term``) whose
    error, masked as the admin shows it, still does."""
    rows = (
        candidates.order_by()
        .select_related(None)
        .only("task_path", "backend_alias", "arguments")
        .annotate(
            rq_search_class=KeyText("exception_class_path", "failed_execution__error"),
            rq_search_traceback=KeyText("traceback", "failed_execution__error"),
        )
    )
    wanted = term.lower()
    shown = masking.error_texts((job, text(job.rq_search_traceback)) for job in rows)
    return [
        job.pk
        for job, error in shown
        # The class path is shown as stored; the traceback masked.
        if wanted in f"{text(getattr(job, 'rq_search_class', ''))} {error}".lower()
    ]
