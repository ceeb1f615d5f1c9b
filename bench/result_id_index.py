"""The PostgreSQL server's CPU for a job's three writes, with and without
the pattern index on ``result_id`` that migration 0020 drops.

    python -m bench.result_id_index [--jobs 3000] [--rounds 12]

Each round inserts ``--jobs`` job rows one statement at a time, then
updates each as a claim stamps it and as a finish does (updates that
change an indexed column or find no room on the page write every index),
in one transaction, on a throw-away database; between rounds the table is
emptied and the index made (as Django made it before 0020) or dropped,
alternating which goes first. What is counted is the CPU time of this
session's own server process (``/proc/<pid>/stat``, in clock ticks), so
other sessions' work on a shared server does not count. Prints the median
microseconds per job of each side and every round's figure, and the
pattern index's size per job.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics

from bench.common import throwaway_database

# The migration's own drop (forwards) and make (backwards) of the index.
_migration = importlib.import_module("robust_queue.migrations.0020_drop_result_id_pattern_index")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=12)
    options = parser.parse_args()
    with throwaway_database("postgresql"):
        _run(options.jobs, options.rounds)


def _run(jobs: int, rounds: int) -> None:
    from django.apps import apps
    from django.db import connection, transaction
    from django.utils import timezone

    from robust_queue.models import Job
    from robust_queue.models.sql import dialect_for

    dialect = dialect_for("default")
    insert, row = dialect._job_insert
    insert_sql = f"{insert}{row} RETURNING id"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        [(server_pid,)] = cursor.fetchall()
    tick = 1e6 / os.sysconf("SC_CLK_TCK")

    def server_ticks() -> int:
        with open(f"/proc/{server_pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    def new_job() -> Job:
        return Job(
            task_path="testproject.tasks.add",
            queue_name="default",
            backend_alias="default",
            arguments={"args": [1, 2], "kwargs": {}},
            enqueued_at=timezone.now(),
        )

    per_job: dict[str, list[float]] = {"with": [], "without": []}
    for number in range(rounds):
        for side in ("with", "without") if number % 2 == 0 else ("without", "with"):
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE robust_queue_job CASCADE")
            with connection.schema_editor() as editor:
                (_migration._backwards if side == "with" else _migration._forwards)(apps, editor)
                index, _ = _migration._pattern_index(apps, editor)
            values = [dialect.job_values([new_job()]) for _ in range(jobs)]
            with transaction.atomic(), connection.cursor() as cursor:
                start = server_ticks()
                ids = []
                for params in values:
                    cursor.execute(insert_sql, params)
                    ids.append(cursor.fetchone()[0])
                for pk in ids:
                    cursor.execute(
                        "UPDATE robust_queue_job SET started_at = now(), "
                        """worker_ids = '["w"]' WHERE id = %s""",
                        [pk],
                    )
                for pk in ids:
                    cursor.execute(
                        "UPDATE robust_queue_job SET finished_at = now() WHERE id = %s", [pk]
                    )
                per_job[side].append((server_ticks() - start) * tick / jobs)
                if side == "with":
                    cursor.execute("SELECT pg_relation_size(%s)", [index])
                    [(size,)] = cursor.fetchall()
    print(f"pattern index size: {size / jobs:.0f} bytes per job ({size:,} for {jobs:,} jobs)")
    for side, figures in per_job.items():
        print(
            f"pattern index {side:7}: {statistics.median(figures):6.1f} µs server CPU per job "
            f"(rounds: {', '.join(f'{f:.0f}' for f in figures)})"
        )


if __name__ == "__main__":
    main()
