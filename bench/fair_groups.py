"""Small tenants' pickup while one tenant sends 90 % of a queue's jobs.

    python -m bench.fair_groups {postgresql,mariadb,sqlite} [--seconds 20]

Starts `manage.py robust_queue` (one worker, 4 threads, queue "tenants")
on a throw-away database and runs three loads of ``--seconds`` each:

- ``alone``: ten small tenants, one job each per second in turn (10 jobs/s
  in all), nobody else: their unloaded baseline;
- ``grouped``: the same, plus a heavy tenant that sends 9x as many jobs
  (90 jobs/s, 90 % of the load) in one burst a second, every job in its
  tenant's fair group (``@fair_group``);
- ``ungrouped``: the same load, no job grouped: the queue's plain
  priority-then-FIFO order, for comparison.

Every job sleeps ``--job-ms`` (5 ms). A small tenant's pickup is its job's
``started_at - enqueued_at`` (both this host's clock: the worker runs
here). Prints p50 and p95 of the small tenants' pickups per load, and the
ratio of each p95 to the baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import time
from typing import Any

from bench.common import setup_django, start_supervisor, teardown_django

SMALL_TENANTS = 10
HEAVY_SHARE = 9  # the heavy tenant sends 9 jobs per small job: 90 %

TASKS = "testproject.fair_tasks"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb", "sqlite"])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--job-ms", type=float, default=5.0)
    options = parser.parse_args()
    # This process enqueues the tenants' tasks: they must be known here too.
    os.environ["ROBUST_QUEUE_CONFIG_JSON"] = json.dumps({"task_modules": [TASKS]})
    setup_django(options.database)
    supervisor = _start()
    try:
        _warm_up()
        figures = {
            load: _run(load, options.seconds, options.job_ms / 1000)
            for load in ("alone", "grouped", "ungrouped")
        }
    finally:
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(timeout=30)
        teardown_django()
    baseline = figures["alone"][1]
    for load, (p50, p95, count) in figures.items():
        print(
            f"{options.database:10} {load:9} small tenants' pickup ({count} jobs): "
            f"p50 {p50:7.1f} ms, p95 {p95:7.1f} ms, p95 / alone {p95 / baseline:5.2f}x"
        )


def _run(load: str, seconds: int, job_seconds: float) -> tuple[float, float, int]:
    """Send ``load`` for ``seconds``; (p50, p95, count) of the small
    tenants' pickups in milliseconds."""
    import robust_queue
    from robust_queue.models import Job
    from testproject import fair_tasks

    task = fair_tasks.tenant_sleep
    grouped = load != "ungrouped"
    small: list[str] = []
    start = time.monotonic()
    for second in range(seconds):
        if load != "alone":
            heavy = "heavy" if grouped else None
            calls: list[Any] = [(task, (heavy, job_seconds), {})] * (SMALL_TENANTS * HEAVY_SHARE)
            robust_queue.enqueue_all(calls)
        for n in range(SMALL_TENANTS):
            # Spread over the second, each tenant in turn.
            _sleep_until(start + second + n / SMALL_TENANTS)
            tenant = f"small-{n}" if grouped else None
            small.append(task.enqueue(tenant, job_seconds).id)
        _sleep_until(start + second + 1)
    jobs = Job.objects.filter(result_id__in=small)
    _wait_for(lambda: not Job.objects.filter(finished_at__isnull=True).exists())
    pickups = [
        (started - enqueued).total_seconds() * 1000
        for enqueued, started in jobs.values_list("enqueued_at", "started_at")
    ]
    Job.objects.all().delete()
    cuts = statistics.quantiles(pickups, n=100, method="inclusive")
    return cuts[49], cuts[94], len(pickups)


def _warm_up() -> None:
    # The worker's first claims (imports, prepared plans) are no tenant's.
    from robust_queue.models import Job
    from testproject import fair_tasks

    for _ in range(20):
        fair_tasks.tenant_sleep.enqueue("warm-up", 0.0)
    _wait_for(lambda: not Job.objects.filter(finished_at__isnull=True).exists())
    Job.objects.all().delete()


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _wait_for(condition: Any, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not done within {timeout} s")
        time.sleep(0.05)


def _start() -> subprocess.Popen[bytes]:
    config = {
        "workers": [{"queues": ["tenants"], "threads": 4, "polling_interval": 0.05}],
        "dispatchers": [],
        "scheduler": False,
        "task_modules": [TASKS],
    }
    return start_supervisor(config)


if __name__ == "__main__":
    main()
