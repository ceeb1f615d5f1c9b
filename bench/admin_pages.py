"""Every admin page, and the query strings a user can type by hand.

Each entry is ``(name, url)``; every one of them is reachable by a
view-only staff user. Ids come from the seeded database.
"""

from __future__ import annotations

from urllib.parse import quote

JOBS = "/admin/robust_queue/job/"
MISS = "zzz-matches-nothing"


def pages() -> list[tuple[str, str]]:
    return [*_pages(), *hand_typed()]


def _ids() -> dict[str, object]:
    from robust_queue.models import (
        BlockedExecution,
        ClaimedExecution,
        FailedExecution,
        Job,
        Process,
        RecurringTask,
        UniqueKey,
    )

    finished = Job.objects.filter(finished_at__isnull=False).order_by("-pk").first()
    assert finished is not None, "seed first"
    unique = UniqueKey.objects.order_by("-pk").first()
    return {
        "failed": FailedExecution.objects.order_by("-pk").values_list("job_id", flat=True)[0],
        "finished": finished.pk,
        "result_id": finished.result_id,
        "blocked": BlockedExecution.objects.order_by("pk").values_list("job_id", flat=True)[0],
        "running": ClaimedExecution.objects.order_by("pk").values_list("job_id", flat=True)[0],
        "process": Process.objects.order_by("pk").values_list("pk", flat=True)[0],
        "recurring": RecurringTask.objects.order_by("pk").values_list("pk", flat=True)[0],
        "unique_key": unique.key if unique else MISS,
    }


def _pages() -> list[tuple[str, str]]:
    ids = _ids()
    return [
        ("overview", f"{JOBS}overview/"),
        ("all jobs", JOBS),
        ("ready jobs", f"{JOBS}?state=ready"),
        ("scheduled jobs", f"{JOBS}?state=scheduled"),
        ("running jobs", f"{JOBS}?state=claimed"),
        ("blocked jobs", f"{JOBS}?state=blocked"),
        ("failed jobs", f"{JOBS}?state=failed"),
        ("finished jobs", f"{JOBS}?state=finished"),
        ("failed jobs, page 100", f"{JOBS}?state=failed&p=100"),
        ("failed jobs of one exception", f"{JOBS}?state=failed&exception=builtins.ValueError"),
        ("finished jobs, last hour", f"{JOBS}?state=finished&period=1h"),
        ("finished jobs, last day", f"{JOBS}?state=finished&period=24h"),
        ("jobs of one queue and task", f"{JOBS}?queue=emails&task=testproject.tasks.echo"),
        ("search by result id", f"{JOBS}?q={ids['result_id']}"),
        ("search by task path", f"{JOBS}?q=tasks.record"),
        ("failed jobs, search error text", f"{JOBS}?state=failed&q=TimeoutError"),
        ("failed jobs, search a class path", f"{JOBS}?state=failed&q=builtins.ValueError"),
        ("failed job page", f"{JOBS}{ids['failed']}/change/"),
        ("finished job page", f"{JOBS}{ids['finished']}/change/"),
        ("blocked job page", f"{JOBS}{ids['blocked']}/change/"),
        ("running job page", f"{JOBS}{ids['running']}/change/"),
        ("task page", f"{JOBS}task/testproject.tasks.record/"),
        ("concurrency", f"{JOBS}concurrency/"),
        ("concurrency, one key", f"{JOBS}concurrency/?job={ids['blocked']}"),
        ("blocked jobs of one key", f"{JOBS}?state=blocked&key_of={ids['blocked']}"),
        ("processes", "/admin/robust_queue/process/"),
        ("process page", f"/admin/robust_queue/process/{ids['process']}/change/"),
        ("recurring tasks", "/admin/robust_queue/recurringtask/"),
        ("recurring task page", f"/admin/robust_queue/recurringtask/{ids['recurring']}/change/"),
        ("job of a unique key", f"{JOBS}?unique_key={quote(str(ids['unique_key']))}"),
    ]


def hand_typed() -> list[tuple[str, str]]:
    """Query strings no link makes, typed by a curious view-only user."""
    return [
        ("all, _facets", f"{JOBS}?_facets=True"),
        ("failed, _facets", f"{JOBS}?state=failed&_facets=True"),
        ("finished, _facets", f"{JOBS}?state=finished&_facets=True"),
        ("all, o=1 (job ascending)", f"{JOBS}?o=1"),
        ("all, o=-1", f"{JOBS}?o=-1"),
        ("failed, o=1", f"{JOBS}?state=failed&o=1"),
        ("finished, o=1", f"{JOBS}?state=finished&o=1"),
        ("all, o=5 (no such column)", f"{JOBS}?o=5"),
        ("all, p=500 (past the cap)", f"{JOBS}?p=500"),
        ("failed, p=99999", f"{JOBS}?state=failed&p=99999"),
        ("finished, p=201 (past the cap)", f"{JOBS}?state=finished&p=201"),
        ("all, search matching nothing", f"{JOBS}?q={MISS}"),
        ("finished, search matching nothing", f"{JOBS}?state=finished&q={MISS}"),
        ("ready, search matching nothing", f"{JOBS}?state=ready&q={MISS}"),
        ("failed, search matching nothing", f"{JOBS}?state=failed&q={MISS}"),
        ("failed, search a 2-letter term (no index)", f"{JOBS}?state=failed&q=ab"),
        ("all, concurrency key matching nothing", f"{JOBS}?concurrency_key={MISS}"),
        (
            "finished, concurrency key matching nothing",
            f"{JOBS}?state=finished&concurrency_key={MISS}",
        ),
        ("all, last hour", f"{JOBS}?period=1h"),
        ("all, last 7 days", f"{JOBS}?period=7d"),
        ("ready, last hour", f"{JOBS}?state=ready&period=1h"),
        ("failed, last hour", f"{JOBS}?state=failed&period=1h"),
        ("all, unknown task", f"{JOBS}?task=testproject.tasks.{MISS}"),
        ("all, unknown queue", f"{JOBS}?queue={MISS}"),
        ("failed, unknown exception", f"{JOBS}?state=failed&exception={MISS}"),
        ("all, unique key matching nothing", f"{JOBS}?unique_key={MISS}"),
        ("all, key of a job", f"{JOBS}?key_of=1"),
        ("task page, unknown task", f"{JOBS}task/testproject.tasks.{MISS}/"),
    ]
