"""How long the metrics view takes over a production-sized queue.

    python -m bench.metrics_timing [--finished 1000000] [--failed 50000] [--runs 5]

Seeds a throw-away PostgreSQL database (bench/admin_seed.py: finished,
failed and 5,000 ready jobs) plus a full retention of statistics: one row
per minute for 14 days for each of 12 (queue, task) keys and their running
totals. Then renders ``GET /queue/metrics`` in-process as a superuser and
prints the median and worst of ``--runs`` renders (after one warm-up), the
number of queries, and each query's plan summary (EXPLAIN ANALYZE's
execution time).
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import throwaway_database

STATISTICS_SQL = """
INSERT INTO robust_queue_statistic (
    minute, queue_name, task_path, finished, failed, retried, discarded, snoozed,
    wait_seconds, run_seconds, {buckets})
SELECT date_trunc('minute', now()) - m * interval '1 minute', q, t, 60, 1, 0, 0, 0, 3.0, 6.0,
    {values}
FROM generate_series(1, %(minutes)s) AS m,
    unnest(%(queues)s::text[]) AS q, unnest(%(tasks)s::text[]) AS t
ON CONFLICT DO NOTHING
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--failed", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with throwaway_database("postgresql"):
        _run(options)


def _seed_statistics() -> None:
    from django.db import connection

    from bench.admin_seed import QUEUES, TASKS
    from robust_queue.models import Statistic
    from robust_queue.models.statistic import COLUMNS, RUN_BUCKETS, TOTALS_MINUTE, WAIT_BUCKETS

    buckets = [*WAIT_BUCKETS, *RUN_BUCKETS]
    sql = STATISTICS_SQL.format(buckets=", ".join(buckets), values=", ".join(["5"] * len(buckets)))
    tasks = [f"testproject.tasks.{name}" for name in TASKS]
    with connection.cursor() as cursor:
        cursor.execute(sql, {"minutes": 14 * 24 * 60, "queues": QUEUES, "tasks": tasks})
    totals = {(TOTALS_MINUTE, q, t): [1000.0] * len(COLUMNS) for q in QUEUES for t in tasks}
    Statistic.objects.add_all(totals)
    connection.set_autocommit(True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE robust_queue_statistic")


def _run(options: argparse.Namespace) -> None:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.admin_seed import seed
    from robust_queue.models import Statistic

    start = time.perf_counter()
    seed(finished=options.finished, failed=options.failed)
    _seed_statistics()
    print(
        f"seeded {options.finished:,} finished + {options.failed:,} failed jobs and "
        f"{Statistic.objects.count():,} statistics rows in {time.perf_counter() - start:.0f} s"
    )
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password="bench"))
    client.get("/queue/metrics")  # warm-up
    timings = []
    for _ in range(options.runs):
        begin = time.perf_counter()
        response = client.get("/queue/metrics")
        timings.append((time.perf_counter() - begin) * 1000)
        assert response.status_code == 200, response.status_code
    print(
        f"GET /queue/metrics: median {statistics.median(timings):.0f} ms, "
        f"worst {max(timings):.0f} ms, {len(response.content):,} bytes"
    )
    with CaptureQueriesContext(connection) as queries:
        client.get("/queue/metrics")
    print(f"{len(queries.captured_queries)} queries:")
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            sql = query["sql"]
            if not sql.lstrip().upper().startswith("SELECT") or "django_session" in sql:
                continue
            cursor.execute("EXPLAIN ANALYZE " + sql)
            plan = [row[0] for row in cursor.fetchall()]
            print(f"- {plan[-1].strip()}: {sql[:110]}")


if __name__ == "__main__":
    main()
