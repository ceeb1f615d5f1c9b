"""How long each admin page takes over a production-sized queue.

    python -m bench.admin_timings [--finished 1000000] [--failed 50000] [--runs 5]

Seeds a throw-away PostgreSQL database (bench/admin_seed.py), then renders
every admin page in-process with Django's test client as a superuser and
prints the median and worst of ``--runs`` renders (after one warm-up).
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import setup_django, teardown_django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--failed", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    setup_django("postgresql")
    try:
        _run(options)
    finally:
        teardown_django()


def _pages() -> list[tuple[str, str]]:
    from robust_queue.models import FailedExecution, Job

    failed = FailedExecution.objects.order_by("-pk").values_list("job_id", flat=True).first()
    finished = Job.objects.filter(finished_at__isnull=False).order_by("-pk").first()
    jobs = "/admin/robust_queue/job/"
    return [
        ("overview", f"{jobs}overview/"),
        ("all jobs", jobs),
        ("ready jobs", f"{jobs}?state=ready"),
        ("scheduled jobs", f"{jobs}?state=scheduled"),
        ("failed jobs", f"{jobs}?state=failed"),
        ("failed jobs, page 100", f"{jobs}?state=failed&p=100"),
        ("failed jobs by exception", f"{jobs}?state=failed&exception=builtins.ValueError"),
        ("finished jobs", f"{jobs}?state=finished"),
        ("finished jobs, last hour", f"{jobs}?state=finished&period=1h"),
        ("jobs of one queue and task", f"{jobs}?queue=emails&task=testproject.tasks.echo"),
        ("search by result id", f"{jobs}?q={finished.result_id}"),
        ("search by task path", f"{jobs}?q=tasks.record"),
        ("failed job page", f"{jobs}{failed}/change/"),
        ("finished job page", f"{jobs}{finished.pk}/change/"),
        ("concurrency", f"{jobs}concurrency/"),
        ("processes", "/admin/robust_queue/process/"),
        ("recurring tasks", "/admin/robust_queue/recurringtask/"),
    ]


def _run(options: argparse.Namespace) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    from bench.admin_seed import seed

    start = time.perf_counter()
    seed(finished=options.finished, failed=options.failed)
    print(
        f"seeded {options.finished:,} finished + {options.failed:,} failed jobs in {time.perf_counter() - start:.0f} s"
    )
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password="bench"))
    print("| page | median | worst |\n|---|---|---|")
    for name, url in _pages():
        client.get(url)  # warm-up
        timings = []
        for _ in range(options.runs):
            begin = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - begin) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        print(f"| {name} | {statistics.median(timings):.0f} ms | {max(timings):.0f} ms |")
    _time_retry_all(client)


def _time_retry_all(client) -> None:  # type: ignore[no-untyped-def]
    """The "Select all" retry of every failed job, as the admin runs it."""
    from robust_queue.models import FailedExecution, ReadyExecution

    failed = list(FailedExecution.objects.values_list("job_id", flat=True)[:1])
    data = {"action": "retry_selected", "_selected_action": failed, "index": 0, "select_across": 1}
    begin = time.perf_counter()
    response = client.post("/admin/robust_queue/job/?state=failed", data)
    elapsed = time.perf_counter() - begin
    assert response.status_code == 302 and not FailedExecution.objects.exists()
    print(f"\nretry all failed ({ReadyExecution.objects.count():,} ready now): {elapsed:.1f} s")


if __name__ == "__main__":
    main()
