"""A named queue's claim behind another queue's higher-priority jobs (PostgreSQL).

    python -m bench.named_queue_skew [--ready 1000000] [--reps 20]

Seeds ``--ready`` ready jobs, every fourth one in "emails" at priority 10
and the rest in "default" at priority 0, their ids interleaved, so that the
all-queues index in claim order holds every "emails" job before the first
"default" one. Then times the row-finding part of a claim of 3 "default"
jobs (``SELECT ... FOR UPDATE SKIP LOCKED``, run and rolled back) written
the old way (``queue_name = %s``) and the way the claim writes it now (a
one-value range, ordered by the name first), alternating ``--reps`` times,
and prints the median and the index each one used.
"""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

from bench.common import throwaway_database

SEED = """
INSERT INTO robust_queue_ready_execution (job_id, queue_name, priority, created_at)
SELECT id, CASE WHEN id %% 4 = 0 THEN 'emails' ELSE 'default' END,
    CASE WHEN id %% 4 = 0 THEN 10 ELSE 0 END, now()
FROM robust_queue_job WHERE finished_at IS NULL
"""
PICK = "SELECT id FROM robust_queue_ready_execution WHERE {where} AND NOT EXISTS "
PICK += "(SELECT 1 FROM robust_queue_task_pause) ORDER BY {order} LIMIT 3 FOR UPDATE SKIP LOCKED"
FORMS = {
    "queue_name = %s (before)": ("queue_name = %s", "priority DESC, job_id", ["default"]),
    "one-value range (now)": (
        "queue_name >= %s AND queue_name <= %s",
        "queue_name, priority DESC, job_id",
        ["default", "default"],
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ready", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=20)
    options = parser.parse_args()
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_named_queue_skew")
    with throwaway_database("postgresql"):
        _run(options.ready, options.reps)


def _run(ready: int, reps: int) -> None:
    from django.db import connection

    from bench.backlog import seed

    seed("default", ready)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM robust_queue_ready_execution")
        cursor.execute(SEED, [])
        cursor.execute("VACUUM ANALYZE robust_queue_ready_execution")
    times: dict[str, list[float]] = {name: [] for name in FORMS}
    used: dict[str, str] = {}
    for rep in range(reps):
        for name in FORMS if rep % 2 == 0 else reversed(FORMS):
            milliseconds, used[name] = _pick(*FORMS[name])
            times[name].append(milliseconds)
    for name, runs in times.items():
        print(
            f"postgresql {ready:,} ready, claim of 3 'default' jobs, {name:26}: "
            f"median {statistics.median(runs):7.3f} ms, max {max(runs):7.3f} ms; {used[name]}"
        )


def _pick(where: str, order: str, params: list[Any]) -> tuple[float, str]:
    """Execution time of one pick (rolled back) and the scan it used."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + PICK.format(where=where, order=order), params
        )
        [plan] = cursor.fetchone()[0]
        transaction.set_rollback(True)
    return plan["Execution Time"], _scan(plan["Plan"])


def _scan(node: dict[str, Any]) -> str:
    """The ready table's scan: its index and the rows it filtered out."""
    if node.get("Relation Name") == "robust_queue_ready_execution":
        removed = node.get("Rows Removed by Filter", 0)
        return f"{node['Node Type']} using {node.get('Index Name')}, {removed:,} rows filtered out"
    for child in node.get("Plans", []):
        if found := _scan(child):
            return found
    return ""


if __name__ == "__main__":
    main()
