"""How long each admin page takes over a production-sized queue, and what
its queries read.

    ROBUST_QUEUE_DB_SUFFIX=_mine python -m bench.admin_timings [--database mariadb] \\
        [--finished 1000000] [--failed 50000 | --jobs 10000000] [--runs 5] [--keep] \\
        [--plans artifacts/bench/admin_plans.txt] [--retry-all] [--seed-only]

Seeds a throw-away PostgreSQL (the default) or MariaDB database
(bench/admin_seed.py; ``--keep`` reuses a seeded one and leaves it), then
renders every admin page and every hand-typed query string
(bench/admin_pages.py) in-process with Django's test client as a
view-only staff user: the median and worst of ``--runs`` renders after
one warm-up, the number of queries, and the most rows one node of one of
their PostgreSQL plans read (bench/admin_explain.py). On MariaDB that last
column is the most rows one table access read, from ``ANALYZE
FORMAT=JSON`` (``r_rows`` x ``r_loops``, with the access type and key),
which runs each SELECT once more, as PostgreSQL's ``EXPLAIN ANALYZE`` does.
Then the bulk confirmation pages as a superuser, and with ``--retry-all``
the "select all" retry of every failed job, run as the admin runs it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import setup_django, teardown_django

VIEW = ("view_job", "view_process", "view_recurringtask")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=("postgresql", "mariadb"), default="postgresql")
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--failed", type=int, default=50_000)
    parser.add_argument(
        "--jobs", type=int, help="about this many jobs, one in twenty failed (sets both)"
    )
    parser.add_argument("--seed-only", action="store_true", help="seed (or keep), time nothing")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="reuse and keep the database")
    parser.add_argument("--plans", type=Path, help="write every page's query plans here")
    parser.add_argument("--retry-all", action="store_true", help="time retrying every failure")
    parser.add_argument("--only", default="", help="only pages whose name contains this")
    options = parser.parse_args()
    if options.jobs:
        from bench.admin_seed import sizes

        options.finished, options.failed = sizes(options.jobs)
    setup_django(options.database, keepdb=options.keep)
    try:
        _run(options)
    finally:
        if not options.keep:
            teardown_django()


def _run(options: argparse.Namespace) -> None:
    from django.test import Client

    from bench.admin_seed import seed
    from robust_queue.models import Job

    if not Job.objects.exists():
        start = time.perf_counter()
        seed(finished=options.finished, failed=options.failed)
        print(
            f"seeded {options.finished:,} finished + {options.failed:,} failed jobs "
            f"in {time.perf_counter() - start:.0f} s"
        )
    if options.seed_only:
        return
    viewer, root = Client(), Client()
    viewer.force_login(_user("bench-viewer", superuser=False))
    root.force_login(_user("bench-root", superuser=True))
    plans = options.plans.open("w") if options.plans else None
    from bench.admin_pages import pages

    read = "plan node" if options.database == "postgresql" else "table access"
    print(f"| page | median | worst | queries | most rows one {read} read |")
    print("|---|---|---|---|---|")
    for name, url in pages():
        if options.only in name:
            _time_page(viewer, name, url, options.runs, plans)
    _time_bulk_confirmations(root, options.runs, plans)
    if plans:
        plans.close()
    if options.retry_all:
        _time_retry_all(root)


def _user(username: str, *, superuser: bool) -> Any:
    from django.contrib.auth.models import Permission, User

    user = User.objects.filter(username=username).first()
    if user is not None:
        return user
    if superuser:
        return User.objects.create_superuser(username, password="bench")
    user = User.objects.create_user(username, password="bench", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=VIEW))
    return user


def _time_page(client: Any, name: str, url: str, runs: int, plans: Any) -> None:
    client.get(url)  # warm-up
    timings, status = [], 0
    for _ in range(runs):
        begin = time.perf_counter()
        status = client.get(url).status_code
        timings.append((time.perf_counter() - begin) * 1000)
    _report(name, f"GET {url}", timings, status, lambda: client.get(url), plans)


def _report(
    name: str, what: str, timings: list[float], status: int, again: Any, plans: Any
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.admin_explain import page_figures, text_plan

    with CaptureQueriesContext(connection) as queries:
        again()
    worst = page_figures(list(queries.captured_queries))
    note = "" if status in (200, 302) else f" (HTTP {status})"
    print(
        f"| {name}{note} | {statistics.median(timings):.0f} ms | {max(timings):.0f} ms "
        f"| {len(queries)} | {worst.shown} |"
    )
    if plans is None:
        return
    plans.write(f"\n### {name}: {what}\n")
    for query in queries.captured_queries:
        sql = query["sql"]
        if sql.lstrip().upper().startswith("SELECT") and "robust_queue_" in sql:
            plans.write(f"\n{sql}\n{text_plan(sql)}\n")


def _time_bulk_confirmations(client: Any, runs: int, plans: Any) -> None:
    """The confirmation page of a "select all" action: it counts the jobs."""
    from robust_queue.models import FailedExecution, Job

    for name, query, action, model in (
        ("bulk discard confirmation, all jobs", "", "discard_selected", Job),
        (
            "bulk retry confirmation, failed jobs",
            "?state=failed",
            "retry_selected",
            FailedExecution,
        ),
    ):
        first = model.objects.order_by("pk").values_list(
            "pk" if model is Job else "job_id", flat=True
        )[0]
        data = {"action": action, "_selected_action": [first], "index": 0, "select_across": 1}
        url = f"/admin/robust_queue/job/{query}"
        client.post(url, data)  # warm-up
        timings, status = [], 0
        for _ in range(runs):
            begin = time.perf_counter()
            status = client.post(url, data).status_code
            timings.append((time.perf_counter() - begin) * 1000)
        _report(
            name,
            f"POST {url} {data}",
            timings,
            status,
            lambda url=url, data=data: client.post(url, data),
            plans,
        )


def _time_retry_all(client: Any) -> None:
    """Confirm "select all" + retry on the failed list; above the
    background threshold the admin enqueues an operation job: run it as a
    worker would, and time both."""
    from django.contrib.admin import helpers

    from robust_queue.models import FailedExecution, Job, ReadyExecution
    from robust_queue.running.performing import perform

    failed = FailedExecution.objects.count()
    first = FailedExecution.objects.order_by("pk").values_list("job_id", flat=True)[0]
    top = FailedExecution.objects.order_by("-job_id").values_list("job_id", flat=True)[0]
    data = {
        "action": "retry_selected",
        helpers.ACTION_CHECKBOX_NAME: [first],
        "index": 0,
        "select_across": 1,
        "confirm": "yes",
        "max_pk": top,
    }
    begin = time.perf_counter()
    response = client.post("/admin/robust_queue/job/?state=failed", data)
    asked = time.perf_counter() - begin
    assert response.status_code == 302, response.status_code
    operation = Job.objects.order_by("-pk").first()
    assert operation is not None and operation.task_path.endswith("bulk_operation")
    # Ahead of the seeded ready jobs, then claimed and performed for real.
    ReadyExecution.objects.filter(job=operation).update(priority=100)
    (claimed,) = ReadyExecution.objects.claim(1, process_id=None, worker_id="bench-worker")
    begin = time.perf_counter()
    perform(claimed)
    ran = time.perf_counter() - begin
    operation.refresh_from_db()
    assert not FailedExecution.objects.exists(), operation.return_value
    print(
        f"\nretry all {failed:,} failed: confirmed in {asked * 1000:.0f} ms (queued as job "
        f"#{operation.pk}); the operation job ran in {ran:.1f} s: {operation.return_value}"
    )


if __name__ == "__main__":
    main()
