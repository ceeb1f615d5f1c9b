"""Claim cost at any backlog: drain jobs of a big ready table against a small one.

    python -m bench.backlog postgresql [--sizes 100000,500000,1000000]
        [--reference 10000] [--finished 1000000] [--drain 4000] [--chunk 500]
        [--batch 3] [--plans]

Two databases on the same server: the reference, kept at ``--reference``
ready jobs, and a second one seeded with server-side SQL (generate_series
on PostgreSQL, the SEQUENCE engine on MariaDB) up to each size in turn.
At each size, ``--drain`` jobs are claimed (claims of ``--batch``, as a
worker with that many idle threads) and performed in-process from each
database, alternating every ``--chunk`` jobs so that both see the same
machine load; the reference is topped up after each chunk. This runs for
the ``*`` selector and for a named queue. Last, ``--finished`` finished
jobs are added beside the largest backlog. Per step: jobs/s of both,
their ratio, claim p50/p95; ``--plans`` prints the claim's plan on the big
database (EXPLAIN ANALYZE, BUFFERS / ANALYZE FORMAT=JSON, rolled back).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
from typing import Any

from bench.common import throwaway_database

# Two queues (the named claim reads one), three priorities: the claim must
# follow its index through them, not sort what it finds.
QUEUES = ("default", "emails", "default", "emails")
ARGUMENTS = '{"args": [1, 1], "kwargs": {}}'
COLUMNS = (
    "result_id, task_path, queue_name, priority, backend_alias, arguments, concurrency_key, "
    "rate_key, enqueued_at, finished_at, worker_ids, errors, metadata, snoozes"
)
POSTGRESQL_JOBS = f"""
INSERT INTO robust_queue_job ({COLUMNS})
SELECT md5(%(tag)s || i::text) || substr(md5(i::text), 1, 11), 'testproject.tasks.add',
    (%(queues)s::text[])[1 + i %% 4], (i %% 3) * 5, 'default', %(arguments)s::jsonb, '', '',
    now(), CASE WHEN %(finished)s THEN now() END, '[]', '[]', '{{}}', 0
FROM generate_series(1, %(count)s) AS i
"""
MARIADB_JOBS = f"""
INSERT INTO robust_queue_job ({COLUMNS})
SELECT CONCAT(MD5(CONCAT(%(tag)s, seq)), LEFT(MD5(seq), 11)), 'testproject.tasks.add',
    ELT(1 + seq %% 4, %(q0)s, %(q1)s, %(q2)s, %(q3)s), (seq %% 3) * 5, 'default',
    %(arguments)s, '', '', NOW(6), IF(%(finished)s, NOW(6), NULL), '[]', '[]', '{{{{}}}}', 0
FROM seq_1_to_{{count}}
"""
READY = """
INSERT INTO robust_queue_ready_execution (job_id, queue_name, priority, created_at)
SELECT id, queue_name, priority, {now} FROM robust_queue_job
WHERE id > %s AND finished_at IS NULL
"""
BIG = "big"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb"])
    parser.add_argument("--sizes", default="100000,500000,1000000")
    parser.add_argument("--reference", type=int, default=10_000)
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--drain", type=int, default=4000)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--batch", type=int, default=3)
    parser.add_argument("--plans", action="store_true")
    options = parser.parse_args()
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", "bench_backlog")
    with throwaway_database(options.database):
        _add_big_database()
        try:
            _run(options)
        finally:
            _drop_big_database()


def _buffer_statistics() -> None:
    """Keep statistics in memory and flush them as a worker does."""
    try:
        from robust_queue.models.statistics import recorder
    except ImportError:
        return
    recorder.start_buffering()


def _add_big_database() -> None:
    """A second database beside ``default``, set up the same way."""
    from django.db import connections

    settings = copy.deepcopy(connections.settings["default"])
    settings["TEST"]["NAME"] = settings["NAME"] + "_big"
    connections.settings[BIG] = settings
    connections[BIG].creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)


def _drop_big_database() -> None:
    from django.db import connections

    connections[BIG].creation.destroy_test_db(connections[BIG].settings_dict["NAME"], verbosity=0)


def _run(options: argparse.Namespace) -> None:
    from robust_queue.models import ReadyExecution

    seed("default", options.reference)
    print(
        f"reference: {options.reference:,} ready jobs, topped up after each chunk of "
        f"{options.chunk}; {options.drain} jobs per database and selector, claims of "
        f"{options.batch}"
    )
    _buffer_statistics()
    for size in (int(s) for s in options.sizes.split(",")):
        seed(BIG, size - ReadyExecution.objects.using(BIG).count())
        _step(options, f"{size:>9,} ready")
    if options.finished:
        seed(BIG, options.finished, finished=True)
        _step(options, f"{size:>9,} ready + {options.finished:,} finished")


def seed(using: str, count: int, *, finished: bool = False) -> None:
    """Add ``count`` jobs to ``using``, ready (or finished), in one statement
    each."""
    from django.db import connections
    from django.db.models import Max

    from robust_queue.models import Job

    if count <= 0:
        return
    last = Job.objects.using(using).aggregate(last=Max("id"))["last"] or 0
    params: dict[str, Any] = {
        "tag": f"{time.time_ns()}-",
        "count": count,
        "arguments": ARGUMENTS,
        "finished": finished,
    }
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRESQL_JOBS, {**params, "queues": list(QUEUES)})
            cursor.execute(READY.format(now="now()"), [last])
            cursor.execute("ANALYZE")
        else:
            params.update({f"q{i}": name for i, name in enumerate(QUEUES)})
            cursor.execute(MARIADB_JOBS.format(count=count), params)
            cursor.execute(READY.format(now="NOW(6)"), [last])
            cursor.execute("ANALYZE TABLE robust_queue_job, robust_queue_ready_execution")
            cursor.fetchall()


def _step(options: argparse.Namespace, label: str) -> None:
    from robust_queue.models import ReadyExecution

    for queue_name in (None, "emails"):
        selector = "*" if queue_name is None else queue_name
        if options.plans:
            print(f"--- plan of the claim ({selector}) at {label.strip()}")
            print(plan(BIG, options.batch, queue_name))
        spent: dict[str, float] = {"default": 0.0, BIG: 0.0}
        claims: dict[str, list[float]] = {"default": [], BIG: []}
        ratios: list[float] = []
        reads: dict[str, int] = {"default": 0, BIG: 0}
        load = os.getloadavg()[0]
        for round_ in range(options.drain // options.chunk):
            # ABBA: neither database always runs first.
            took = {}
            for using in ("default", BIG) if round_ % 2 == 0 else (BIG, "default"):
                before = pages_read(using)
                took[using], times = drain(using, options.chunk, options.batch, queue_name)
                reads[using] += pages_read(using) - before
                spent[using] += took[using]
                claims[using] += times
            ratios.append(took[BIG] / took["default"])
            reference = ReadyExecution.objects.using("default").count()
            seed("default", options.reference - reference)
        jobs = options.drain
        print(
            f"{options.database:10} {label:34} {selector:6} "
            f"{_rate(jobs, spent[BIG], claims[BIG], reads[BIG])} vs reference "
            f"{_rate(jobs, spent['default'], claims['default'], reads['default'])}: "
            f"{spent[BIG] / spent['default']:.2f}x the time per job "
            f"(median of rounds {statistics.median(ratios):.2f}x); "
            f"load {load:.1f}-{os.getloadavg()[0]:.1f}"
        )


def _rate(jobs: int, elapsed: float, claims: list[float], reads: int) -> str:
    return (
        f"{jobs / elapsed:5.0f} jobs/s (claim p50 {percentile(claims, 50):4.2f} "
        f"p95 {percentile(claims, 95):5.2f} ms, {reads / jobs:.2f} pages read/job)"
    )


def pages_read(using: str) -> int:
    """Pages the server has read from outside its buffer cache: for this
    database on PostgreSQL (reported up to a second late), for the whole
    server on MariaDB."""
    from django.db import connections

    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT blks_read FROM pg_stat_database WHERE datname = current_database()"
            )
        else:
            cursor.execute(
                "SELECT variable_value FROM information_schema.global_status "
                "WHERE variable_name = 'INNODB_BUFFER_POOL_READS'"
            )
        return int(cursor.fetchone()[0])


def drain(using: str, jobs: int, batch: int, queue_name: str | None) -> tuple[float, list[float]]:
    """Claim and perform ``jobs`` jobs of ``using``, ``batch`` per claim:
    the time it took and each claim's time."""
    from robust_queue.models import ReadyExecution
    from robust_queue.running.performing import perform

    claims: list[float] = []
    done = 0
    start = time.perf_counter()
    while done < jobs:
        began = time.perf_counter()
        rows = ReadyExecution.objects.using(using).claim(
            min(batch, jobs - done),
            process_id=None,
            worker_id="bench",
            queue_name=queue_name,
            paused_tasks=(),
        )
        claims.append(time.perf_counter() - began)
        if not rows:
            raise RuntimeError(f"{using} ran out of ready jobs after {done}")
        for row in rows:
            perform(row)
            done += 1
        _flush_statistics()
    return time.perf_counter() - start, claims


def _flush_statistics() -> None:
    try:
        from robust_queue.models.statistics import recorder
    except ImportError:
        return
    recorder.flush_if_due()


def percentile(seconds: list[float], p: int) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, len(ordered) * p // 100)] * 1000


def plan(using: str, batch: int, queue_name: str | None) -> str:
    """The claim's plan, measured by running it in a rolled-back transaction."""
    from django.db import connections, transaction
    from django.utils import timezone

    from robust_queue.models.sql import dialect_for, queue_filter

    connection = connections[using]
    dialect: Any = dialect_for(using)
    where, params = queue_filter(queue_name, [])
    queue = (f"{where} AND {dialect.task_pause_filter(())}", params)
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql, args = dialect.claim_in_one(batch, queue, None, "bench", timezone.now())
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, args)
            text = _picked([row[0] for row in cursor.fetchall()])
        else:
            sql, args = dialect.lock_ready(batch, queue)
            cursor.execute("ANALYZE FORMAT=JSON " + sql, args)
            text = _tables(json.loads(cursor.fetchone()[0]))
        transaction.set_rollback(True, using=using)
    return text


def _picked(lines: list[str]) -> str:
    """The part of a PostgreSQL claim plan that finds the rows, and its total
    (the rest moves 3 rows by primary key)."""
    start = next(i for i, line in enumerate(lines) if "CTE picked" in line)
    end = next(i for i, line in enumerate(lines) if "CTE taken" in line)
    return "\n".join([*lines[start:end], *[line for line in lines if "Time:" in line]])


def _tables(node: Any) -> str:
    """One line per table a MariaDB ANALYZE FORMAT=JSON read, and whether it
    sorted (filesort) at all."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "table_name" in value:
                pages = value.get("r_engine_stats", {}).get("pages_accessed", 0)
                found.append(
                    f"  {value['table_name']}: {value.get('access_type')} "
                    f"key={value.get('key')} rows={value.get('rows')} "
                    f"r_rows={value.get('r_rows')} pages={pages} "
                    f"condition={value.get('attached_condition', '-')}"
                )
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(node)
    sort = "filesort" in json.dumps(node)
    return "\n".join([*found, f"  filesort: {'yes' if sort else 'no'}"])


if __name__ == "__main__":
    main()
