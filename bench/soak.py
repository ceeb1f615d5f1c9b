"""A soak: the real supervisor for an hour at half its drain rate, on a
database that already holds a long history, with a realistic mix.

    python -m bench.soak postgresql [--minutes 60] [--history 1000000]
        [--rate JOBS_PER_S | --fraction 0.5] [--long-transactions]
        [--long-first 180] [--long-every 180] [--long-seconds 120]
        [--backlog N] [--table-options NAME=VALUE,...]
        [--job-table-options NAME=VALUE,...] [--keep]

In one run, on a throw-away database of its own (``rq_soak_<vendor>_<pid>``,
dropped at the end):

1. The drain rate: ``--drain`` jobs of the soak's main task drained by the
   soak's own worker shape (unless ``--rate`` gives the target rate). The
   target is ``--fraction`` of it.
2. The history: ``--history`` finished jobs spread over the last
   ``history / target`` seconds (``bench.soak_seed``: INSERT ... SELECT),
   and retention set to that span: old jobs age out as fast as new ones
   arrive, so a healthy queue keeps the job table's size flat.
3. The soak, for ``--minutes``: `manage.py robust_queue` with two worker
   processes of 3 threads (the second recycled by ``max_jobs`` about every
   two minutes), a dispatcher, a scheduler running a recurring task every
   10 s, statistics and retention on; this process enqueues at the target
   rate: 80 % plain jobs, 10 % scheduled 1-30 s ahead, 5 % concurrency-
   limited (10 keys, one run at a time each), 5 % failing (4 % fail once
   and succeed on their retry, 1 % fail all three attempts). Every run
   writes a ledger row (key, attempt).

Every 0.5 s it samples the ready and claimed counts, the supervisor's
heartbeat age (by the database's clock), the processes' RSS, and times the
claim's first statement (its ``SELECT ... FOR UPDATE SKIP LOCKED`` of one
ready row, under EXPLAIN ANALYZE / ANALYZE FORMAT=JSON, rolled back) in
milliseconds and in pages read (the work, whatever the machine's load),
and reads the age of the server's oldest other transaction (anyone's: a
long one holds back vacuum or purge). Each minute it prints a row:
finished jobs/s, pickup p50/p99 of plain jobs, how late scheduled jobs
start (p99), ready and claimed counts, table and index sizes (PostgreSQL:
dead tuples of the job and ready tables; MariaDB: the InnoDB history list
length), RSS of the supervisor and both workers, the largest heartbeat
age, the claim probe's p50/p95 and pages p95, and the oldest transaction.

At the end, after the backlog drains: the last-window vs first-window
comparison (10 minutes, or a quarter of a shorter run) of throughput and
pickup p99 (goal: within 10 %), sizes, RSS growth (goal: < 10 %), the
largest heartbeat age against twice the interval, and the ledger's count
of runs per job: nothing lost, nothing run twice.

``--backlog N`` starts with N more ready jobs at priority -10, drained
behind the new ones (the ready table then holds N live rows, which sets
PostgreSQL's default autovacuum threshold at 20 % of them);
``--table-options`` sets storage parameters on the ready, claimed,
scheduled and blocked tables first, ``--job-table-options`` on the job
table (PostgreSQL), to compare autovacuum settings.

``--long-transactions`` adds section 7 of issue 25: a read transaction on
another connection to the same database, held ``--long-seconds`` (120)
every ``--long-every`` seconds (180) from ``--long-first`` (PostgreSQL:
REPEATABLE READ, a snapshot that holds back vacuum; MariaDB: START
TRANSACTION WITH CONSISTENT SNAPSHOT under REPEATABLE READ, a read view
that holds back purge), each starting with an analytics query over the job
table. For each: the claim probe's p95 during it against the baseline
(goal: within 3x) and how long the ready backlog takes to return to its
baseline once it ends (goal: within 60 s). On PostgreSQL the claim's plan
(EXPLAIN ANALYZE, BUFFERS) is printed before the first transaction and at
its end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import setup_django, start_supervisor, teardown_django

TASKS = "bench.soak_tasks"
HEARTBEAT = 10.0
SAMPLE_EVERY = 0.5
# One line of the per-minute table.
HEADER = (
    "| min | done/s | pickup p50 ms | pickup p99 ms | sched late p99 ms | ready avg/max "
    "| claimed avg | job MB (heap+idx) | queue tables kB | dead/purge | RSS sup/w1/w2 MiB "
    "| hb age max s | claim p50/p95 ms | claim pages p95 | oldest txn s | long txn |"
)


def config(rate: float, span: float | None) -> dict[str, Any]:
    """The soak supervisor's ROBUST_QUEUE (``span``: retention; None: the drain run)."""
    worker = {"queues": ["*"], "threads": 3, "processes": 1, "polling_interval": 0.1}
    # About one recycle every two minutes: each worker takes half the jobs.
    recycle = max(500, int(rate * 60))
    settings: dict[str, Any] = {
        "workers": [worker, {**worker, "max_jobs": recycle}],
        "dispatchers": [{"batch_size": 500, "polling_interval": 0.2}],
        "scheduler": {"polling_interval": 1},
        "recurring_tasks": {
            "soak-tick": {"task": f"{TASKS}.tick", "schedule": "*/10 * * * * * *"},
        },
        "task_modules": [TASKS],
        "process_heartbeat_interval": HEARTBEAT,
        "process_alive_threshold": 60,
        "shutdown_timeout": 10,
    }
    if span is None:
        settings["recurring_tasks"] = {}
    else:
        settings["clear_finished_jobs_after"] = span
        settings["clear_failed_jobs_after"] = span
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", choices=["postgresql", "mariadb"])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, help="jobs/s to enqueue (skips the drain run)")
    parser.add_argument("--fraction", type=float, default=0.5, help="of the drain rate")
    parser.add_argument("--drain", type=int, default=4000, help="jobs of the drain run")
    parser.add_argument("--long-transactions", action="store_true")
    parser.add_argument("--long-first", type=float, default=180.0)
    parser.add_argument("--long-every", type=float, default=180.0)
    parser.add_argument("--long-seconds", type=float, default=120.0)
    parser.add_argument(
        "--backlog",
        type=int,
        default=0,
        help="ready jobs at priority -10 at the start (new jobs go first)",
    )
    parser.add_argument(
        "--table-options",
        default="",
        metavar="NAME=VALUE,...",
        help="PostgreSQL: storage parameters set on the ready, claimed, scheduled and "
        "blocked tables before the soak (e.g. autovacuum_vacuum_scale_factor=0,"
        "autovacuum_vacuum_threshold=500,autovacuum_vacuum_cost_delay=0)",
    )
    parser.add_argument(
        "--job-table-options",
        default="",
        metavar="NAME=VALUE,...",
        help="PostgreSQL: storage parameters set on the job table before the soak "
        "(e.g. autovacuum_vacuum_scale_factor=0.02)",
    )
    parser.add_argument(
        "--probe",
        choices=["resumed", "head"],
        default="resumed",
        help="the claim the probe times: a worker's, resumed after the last claimed job "
        "(sql/claim_position.py), or one from the head of the ready index",
    )
    parser.add_argument("--keep", action="store_true", help="keep the database")
    options = parser.parse_args()
    # TERM (a stopped benchmark) runs the clean-up too: stop the supervisor, drop the database.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"stopped by signal {signum}"))
    os.environ.setdefault("ROBUST_QUEUE_BENCH_DB", f"rq_soak_{options.database}_{os.getpid()}")
    # This process enqueues the soak's tasks: they must be known here too.
    os.environ["ROBUST_QUEUE_CONFIG_JSON"] = json.dumps({"task_modules": [TASKS]})
    setup_django(options.database)
    try:
        Soak(options).run()
    finally:
        if not options.keep:
            from django.db import connections

            connections.close_all()
            teardown_django()


@dataclass
class Sample:
    at: float  # seconds since the soak started
    ready: int
    claimed: int
    heartbeat_age: float | None
    claim_ms: float | None
    claim_pages: int | None
    rss: dict[str, float]  # MiB by role
    long_open: bool
    # Seconds the server's oldest other transaction has been open (anyone's).
    oldest_transaction: float | None = None


@dataclass
class LongTransaction:
    start: float
    end: float = 0.0
    query_s: float = 0.0


@dataclass
class State:
    stop: threading.Event = field(default_factory=threading.Event)
    stop_enqueue: threading.Event = field(default_factory=threading.Event)
    samples: list[Sample] = field(default_factory=list)
    enqueued: int = 0
    long: list[LongTransaction] = field(default_factory=list)
    long_open: bool = False
    explain: list[str] = field(default_factory=list)  # labels asked for
    plans: list[tuple[str, str]] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


class Soak:
    def __init__(self, options: argparse.Namespace) -> None:
        from django.db import connection

        self.options = options
        self.vendor = connection.vendor
        self.state = State()
        self.window = max(1, min(10, int(options.minutes // 4)))
        # Retention's span in seconds, which the seeded history covers (run()).
        self.span = 600.0
        self.log = Path(tempfile.gettempdir()) / f"soak_{options.database}_{os.getpid()}.log"

    # --- the run ---------------------------------------------------------

    def run(self) -> None:
        from django.db import connection

        options = self.options
        name = connection.settings_dict["NAME"]
        print(f"# soak on {connection.display_name} {self._server_version()}, database {name}")
        drain = options.rate / options.fraction if options.rate else self._drain_rate()
        rate = options.rate or drain * options.fraction
        span = self.span = max(600.0, options.history / rate)
        print(
            f"drain rate {drain:.0f} jobs/s -> target {rate:.0f} jobs/s; "
            f"history {options.history:,} finished jobs over {span:.0f} s (= retention)",
            flush=True,
        )
        started = time.monotonic()
        from bench.soak_seed import backlog, seed

        seed(options.history, span)
        self.backlog_after = self._max_pk()
        backlog(options.backlog)
        print(
            f"seeded in {time.monotonic() - started:.0f} s"
            + (f" (and {options.backlog:,} ready jobs at priority -10)" if options.backlog else ""),
            flush=True,
        )
        self.first_pk = self._max_pk()
        self._table_options()
        self.settings = config(rate, span)
        supervisor = self._start(self.settings, self.log)
        try:
            self._wait_for_children()
            self._soak(supervisor, rate)
        finally:
            self._stop(supervisor)
        self._verdict()

    def _table_options(self) -> None:
        """``--table-options`` on the churning queue tables and
        ``--job-table-options`` on the job table (PostgreSQL)."""
        from django.db import connection

        if self.vendor != "postgresql":
            return
        queue = ["ready", "claimed", "scheduled", "blocked"]
        tables = [(f"robust_queue_{name}_execution", self.options.table_options) for name in queue]
        tables.append(("robust_queue_job", self.options.job_table_options))
        with connection.cursor() as cursor:
            for table, options in tables:
                if options:
                    cursor.execute(f"ALTER TABLE {table} SET ({options})")
                    print(f"{table}: {options}")

    def _soak(self, supervisor: subprocess.Popen[bytes], rate: float) -> None:
        state = self.state
        self.t0 = time.monotonic()
        self.wall0 = datetime.now().astimezone()
        threads = [
            threading.Thread(target=self._enqueue, args=(rate,), name="enqueue"),
            threading.Thread(target=self._sample, args=(supervisor.pid,), name="sample"),
        ]
        if self.options.long_transactions:
            threads.append(threading.Thread(target=self._long_transactions, name="long"))
        for thread in threads:
            thread.start()
        self.rows: list[dict[str, Any]] = []
        print(f"\nsoak: {self.options.minutes:g} min at {rate:.0f} jobs/s (log: {self.log})")
        print(HEADER)
        print(_separator(HEADER))
        minutes = int(self.options.minutes)
        try:
            for minute in range(1, minutes + 1):
                self._sleep_until(minute * 60)
                row = self._minute(minute)
                self.rows.append(row)
                print(_format(row), flush=True)
        finally:
            state.stop_enqueue.set()
            drained = self._wait_drained(timeout=240)
            state.stop.set()
            for thread in threads:
                thread.join()
        self.drained = drained

    def _sleep_until(self, offset: float) -> None:
        while (left := self.t0 + offset - time.monotonic()) > 0:
            time.sleep(min(left, 1.0))

    # --- the processes -----------------------------------------------------

    def _start(self, settings: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
        return start_supervisor(settings, level="INFO", log=log, append=True)

    def _stop(self, supervisor: subprocess.Popen[bytes]) -> None:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(timeout=60)
        except subprocess.TimeoutExpired:
            supervisor.kill()
            supervisor.wait()

    def _wait_for_children(self, workers: int = 2) -> None:
        from robust_queue.models import Process

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            kinds = Counter(Process.objects.values_list("kind", flat=True))
            if kinds["worker"] >= workers and kinds["dispatcher"] >= 1:
                time.sleep(1)
                return
            time.sleep(0.2)
        raise SystemExit("the supervisor's children did not start within 120 s")

    def _drain_rate(self) -> float:
        """Jobs/s of the soak's worker shape draining ``--drain`` plain jobs."""
        from django.db.models import Max, Min

        import robust_queue
        from bench import soak_tasks
        from robust_queue.models import Job, Pause
        from testproject.models import LedgerEntry

        jobs = self.options.drain
        pause = Pause.objects.create(queue_name="default")
        for start in range(0, jobs, 1000):
            robust_queue.enqueue_all(
                [(soak_tasks.work, (f"d{i}",), {}) for i in range(start, min(jobs, start + 1000))]
            )
        supervisor = self._start(config(1000, None), self.log)
        try:
            self._wait_for_children()
            pause.delete()
            deadline = time.monotonic() + 600
            while Job.objects.filter(finished_at__isnull=True).exists():
                if time.monotonic() > deadline:
                    raise SystemExit("the drain run did not finish within 10 minutes")
                time.sleep(0.2)
        finally:
            self._stop(supervisor)
        span = Job.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
        rate = jobs / (span["last"] - span["first"]).total_seconds()
        Job.objects.all().delete()
        LedgerEntry.objects.all().delete()
        return rate

    # --- the threads ---------------------------------------------------------

    def _enqueue(self, rate: float) -> None:
        """Enqueue at ``rate`` jobs/s in small bursts (every 20 ms), the mix
        of the module's docstring by each job's number."""
        from django.db import DatabaseError, connections

        import robust_queue

        state = self.state
        start = time.monotonic()
        try:
            while not state.stop_enqueue.is_set():
                due = int((time.monotonic() - start) * rate) - state.enqueued
                if due > 0:
                    calls = [_call(seq) for seq in range(state.enqueued, state.enqueued + due)]
                    try:
                        robust_queue.enqueue_all(calls)
                        state.enqueued += due
                    except DatabaseError as exc:
                        state.errors[f"enqueue: {exc!r:.80}"] += 1
                        connections["default"].close()
                time.sleep(0.02)
        finally:
            connections.close_all()

    def _sample(self, supervisor_pid: int) -> None:
        from django.db import DatabaseError, connections

        state = self.state
        try:
            while not state.stop.is_set():
                began = time.monotonic()
                try:
                    state.samples.append(self._one_sample(supervisor_pid))
                    while state.explain:
                        label = state.explain.pop(0)
                        state.plans.append((label, self._explain()))
                except DatabaseError as exc:
                    state.errors[f"sample: {exc!r:.80}"] += 1
                    connections["default"].close()
                time.sleep(max(0.0, SAMPLE_EVERY - (time.monotonic() - began)))
        finally:
            connections.close_all()

    def _one_sample(self, supervisor_pid: int) -> Sample:
        from robust_queue.models import ClaimedExecution, Process, ReadyExecution
        from robust_queue.models.clock import database_now

        claim_ms, claim_pages = self._claim_probe()
        ready = ReadyExecution.objects.count()
        claimed = ClaimedExecution.objects.count()
        beat = (
            Process.objects.filter(kind="supervisor", pid=supervisor_pid)
            .values_list("last_heartbeat_at", flat=True)
            .first()
        )
        age = (database_now("default") - beat).total_seconds() if beat else None
        rows = Process.objects.filter(supervisor__pid=supervisor_pid).values_list(
            "kind", "pid", "metadata"
        )
        rss = {"supervisor": _rss(supervisor_pid)}
        for kind, pid, metadata in rows:
            role = kind
            if kind == "worker":
                recycled = isinstance(metadata, dict) and metadata.get("max_jobs")
                role = "worker-recycled" if recycled else "worker"
            value = _rss(pid)
            if value:
                rss[role] = value
        from robust_queue.models.sql import dialect_for

        oldest = dialect_for("default").oldest_transaction()
        return Sample(
            oldest_transaction=None if oldest is None else oldest.age,
            at=time.monotonic() - self.t0,
            ready=ready,
            claimed=claimed,
            heartbeat_age=age,
            claim_ms=claim_ms,
            claim_pages=claim_pages,
            rss=rss,
            long_open=self.state.long_open,
        )

    def _probe_statements(self) -> list[tuple[str, list[Any]]]:
        """A ``*`` worker's reads of one ready row to lock, in order (the
        last one locks it): from the head of the ready index (``--probe
        head``), or resumed after the last job claimed, as a worker's claim
        is (``claim_position.py``; MariaDB: a backward read first)."""
        from django.db import connection

        from robust_queue.models.sql import dialect_for

        dialect = dialect_for("default")
        queue = dialect.claim_filter(None, [], [])
        if self.options.probe == "head":
            return dialect.claim_reads(1, queue, None)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT priority, id FROM robust_queue_job "
                "WHERE id > %s AND started_at IS NOT NULL ORDER BY id DESC LIMIT 1",
                [self.first_pk],
            )
            last = cursor.fetchone()
        return dialect.claim_reads(1, queue, None if last is None else (last[0], last[1]))

    def _claim_probe(self) -> tuple[float, int]:
        """Milliseconds and pages of the claim's reads of one ready row to
        lock (as a ``*`` worker claims), each run under EXPLAIN ANALYZE
        (PostgreSQL: shared buffers hit or read; MariaDB: ANALYZE's
        pages_accessed; a ``SET @v = (SELECT ...)`` by its SELECT, then
        run) and rolled back: it writes nothing. The pages are the work,
        apart from how long this loaded machine made it wait."""
        from django.db import connection, transaction

        elapsed, pages = 0.0, 0
        with transaction.atomic():
            with connection.cursor() as cursor:
                for sql, params in self._probe_statements():
                    measured = sql[sql.index("(") + 1 : -1] if sql.startswith("SET ") else sql
                    if self.vendor == "postgresql":
                        measured = f"EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) {measured}"
                    else:
                        measured = f"ANALYZE FORMAT=JSON {measured}"
                    began = time.perf_counter()
                    cursor.execute(measured, params)
                    (plan,) = cursor.fetchone()
                    elapsed += time.perf_counter() - began
                    if sql.startswith("SET "):
                        cursor.execute(sql, params)
                    if self.vendor == "postgresql":
                        top = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
                        pages += int(top.get("Shared Hit Blocks", 0))
                        pages += int(top.get("Shared Read Blocks", 0))
                    else:
                        pages += sum(_values_of(json.loads(plan), "pages_accessed"))
            transaction.set_rollback(True)
        return elapsed * 1000, pages

    def _explain(self) -> str:
        from django.db import connection, transaction

        sql, params = self._probe_statements()[-1]
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
                text = "\n".join(row[0] for row in cursor.fetchall())
            transaction.set_rollback(True)
        return text

    def _long_transactions(self) -> None:
        """Every ``--long-every`` s from ``--long-first``: a read transaction
        held ``--long-seconds`` on a connection of its own (this thread's)."""
        from django.db import DatabaseError, connection, connections

        options, state = self.options, self.state
        starts = []
        at = options.long_first
        # Each one ends at least 60 s before the soak does: its recovery is measured.
        while at + options.long_seconds + 60 <= options.minutes * 60:
            starts.append(at)
            at += options.long_every
        try:
            for start in starts:
                self._sleep_until_or_stop(start - 3)
                if state.stop.is_set():
                    return
                if self.vendor == "postgresql" and not state.long:
                    state.explain.append("before the first long transaction")
                self._sleep_until_or_stop(start)
                if state.stop.is_set():
                    return
                record = LongTransaction(start=time.monotonic() - self.t0)
                with connection.cursor() as cursor:
                    if self.vendor == "postgresql":
                        cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    else:
                        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                    state.long_open = True
                    began = time.monotonic()
                    # An analytics query: a scan of the job history.
                    cursor.execute(
                        "SELECT queue_name, count(*), max(finished_at) "
                        "FROM robust_queue_job GROUP BY queue_name"
                    )
                    cursor.fetchall()
                    record.query_s = time.monotonic() - began
                    end = start + options.long_seconds
                    if self.vendor == "postgresql":
                        self._sleep_until_or_stop(end - 3)
                        state.explain.append(
                            f"at the end of long transaction {len(state.long) + 1}"
                        )
                    self._sleep_until_or_stop(end)
                    cursor.execute("COMMIT")
                    state.long_open = False
                    record.end = time.monotonic() - self.t0
                state.long.append(record)
                if self.vendor == "postgresql":
                    self._sleep_until_or_stop(record.end + 10)
                    state.explain.append(f"10 s after long transaction {len(state.long)} ended")
        except DatabaseError as exc:
            state.errors[f"long transaction: {exc!r:.80}"] += 1
        finally:
            state.long_open = False
            connections.close_all()

    def _sleep_until_or_stop(self, offset: float) -> None:
        while (left := self.t0 + offset - time.monotonic()) > 0 and not self.state.stop.is_set():
            time.sleep(min(left, 0.5))

    # --- per minute ----------------------------------------------------------

    def _minute(self, minute: int) -> dict[str, Any]:
        from robust_queue.models import Job

        end = self.wall0 + timedelta(seconds=minute * 60)
        start = end - timedelta(seconds=60)
        soak = Job.objects.filter(id__gt=self.first_pk)
        finished = soak.filter(finished_at__gte=start, finished_at__lt=end).count()
        started = soak.filter(
            enqueued_at__gte=start - timedelta(minutes=10),
            started_at__gte=start,
            started_at__lt=end,
        )
        pickups, lates = [], []
        for task_path, enqueued, run_after, began in started.values_list(
            "task_path", "enqueued_at", "run_after", "started_at"
        ):
            if run_after is not None:
                lates.append((began - run_after).total_seconds() * 1000)
            elif task_path == f"{TASKS}.work":
                pickups.append((began - enqueued).total_seconds() * 1000)
        samples = [s for s in self.state.samples if minute * 60 - 60 <= s.at < minute * 60]
        claims = [s.claim_ms for s in samples if s.claim_ms is not None]
        ages = [s.heartbeat_age for s in samples if s.heartbeat_age is not None]
        rss: dict[str, float] = {}
        for role in ("supervisor", "worker", "worker-recycled"):
            values = [s.rss[role] for s in samples if role in s.rss]
            rss[role] = statistics.mean(values) if values else 0.0
        return {
            "minute": minute,
            "throughput": finished / 60,
            "pickup_p50": _percentile(pickups, 50),
            "pickup_p99": _percentile(pickups, 99),
            "late_p99": _percentile(lates, 99),
            "ready_avg": statistics.mean([s.ready for s in samples]) if samples else 0,
            "ready_max": max([s.ready for s in samples], default=0),
            "claimed_avg": statistics.mean([s.claimed for s in samples]) if samples else 0,
            "sizes": self._sizes(),
            "rss": rss,
            "heartbeat_max": max(ages, default=None),
            "claim_p50": _percentile(claims, 50),
            "claim_p95": _percentile(claims, 95),
            "pages_p95": _percentile(
                [s.claim_pages for s in samples if s.claim_pages is not None], 95
            ),
            "long": any(s.long_open for s in samples),
            "oldest": max(
                (s.oldest_transaction for s in samples if s.oldest_transaction is not None),
                default=None,
            ),
        }

    def _sizes(self) -> dict[str, Any]:
        """Heap and index bytes of the job table, all bytes of the
        other queue tables; dead tuples (PostgreSQL) or the history list
        length (MariaDB)."""
        from django.db import connection

        with connection.cursor() as cursor:
            if self.vendor == "postgresql":
                cursor.execute(
                    "SELECT s.relname, pg_table_size(s.relid), pg_indexes_size(s.relid), "
                    "s.n_dead_tup FROM pg_stat_user_tables AS s "
                    "WHERE s.relname LIKE 'robust_queue%%'"
                )
                rows = cursor.fetchall()
                purge = None
            else:
                cursor.execute(
                    "SELECT table_name, data_length, index_length, 0 "
                    "FROM information_schema.tables WHERE table_schema = DATABASE() "
                    "AND table_name LIKE 'robust_queue%%'"
                )
                rows = cursor.fetchall()
                cursor.execute("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'")
                found = cursor.fetchone()
                purge = int(found[1]) if found else None
        by_table = {
            name: (int(heap or 0), int(index or 0), int(dead or 0))
            for name, heap, index, dead in rows
        }
        job = by_table.get("robust_queue_job", (0, 0, 0))
        queue = ("ready", "claimed", "scheduled", "blocked")
        queue_bytes = sum(
            sum(by_table.get(f"robust_queue_{name}_execution", (0, 0, 0))[:2]) for name in queue
        )
        ready_dead = by_table.get("robust_queue_ready_execution", (0, 0, 0))[2]
        return {
            "job_heap": job[0],
            "job_index": job[1],
            "job_dead": job[2],
            "queue_bytes": queue_bytes,
            "ready_dead": ready_dead,
            "purge": purge,
            "all_bytes": sum(heap + index for heap, index, _ in by_table.values()),
        }

    # --- the end -------------------------------------------------------------

    def _wait_drained(self, timeout: float) -> bool:
        """Every soak job finished or failed for good (its retries done)."""
        from robust_queue.models import Job

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = Job.objects.filter(
                id__gt=self.first_pk, finished_at__isnull=True, failed_execution__isnull=True
            ).exclude(task_path=f"{TASKS}.tick")
            if not left.exists():
                return True
            time.sleep(1)
        return False

    def _job_table_check(
        self, rows: list[dict[str, Any]], window: int
    ) -> tuple[str, bool | None, str]:
        """Whether the job table's size is bounded, judged once the seeded
        history has turned over: until retention has replaced every seeded
        row (minimal successes written in one INSERT) with live ones
        (larger, some with a traceback, and less packed: each is updated
        twice after its insert), the table grows whatever happens after.
        Compares the size just after that turn-over with the last; not
        judged (None) if the run ends too soon, with the run that would."""

        def size(row: dict[str, Any]) -> int:
            return int(row["sizes"]["job_heap"] + row["sizes"]["job_index"])

        turned = int(math.ceil(self.span / 60))
        whole = (size(rows[-1]) - size(rows[0])) / size(rows[0]) if size(rows[0]) else 0.0
        if len(rows) < turned + 2 * window:
            # Retention's span is 600 s at least (run()): a smaller history
            # turns over sooner only down to minute 10.
            room = len(rows) - 2 * window
            instead = ""
            if room * 60 >= 600:
                history = int(self.options.history / self.span * 60 * room)
                instead = f", or --history {history:,} or less"
            return (
                "job table size",
                None,
                f"{size(rows[0]) / 2**20:.0f} -> {size(rows[-1]) / 2**20:.0f} MB ({whole:+.0%}) "
                f"while the seeded history turns over (minute {turned}); not judged: run "
                f"{turned + 2 * window} minutes or more{instead}",
            )
        before, after = size(rows[turned]), size(rows[-1])
        growth = (after - before) / before if before else 0.0
        return (
            "job table size",
            growth <= 0.10,
            f"{before / 2**20:.0f} MB at minute {turned + 1} (history turned over) -> "
            f"{after / 2**20:.0f} MB ({growth:+.0%}; goal bounded: < 10 % growth)",
        )

    def _verdict(self) -> None:
        rows, window = self.rows, self.window
        if len(rows) < 2 * window:
            print("too short for a verdict")
            return
        first, last = rows[:window], rows[-window:]
        print(f"\nverdict: last {window} min against the first {window} min")

        def mean(part: list[dict[str, Any]], key: str) -> float:
            values = [row[key] for row in part if row[key] is not None]
            return statistics.mean(values) if values else 0.0

        checks = []
        for key, label in (("throughput", "throughput"), ("pickup_p99", "pickup p99")):
            a, b = mean(first, key), mean(last, key)
            change = (b - a) / a if a else 0.0
            ok = abs(change) <= 0.10 if key == "throughput" else change <= 0.10
            checks.append((label, ok, f"{a:.1f} -> {b:.1f} ({change:+.0%}; goal within 10 %)"))
        checks.append(self._job_table_check(rows, window))
        queue_first = max(row["sizes"]["queue_bytes"] for row in first)
        queue_last = max(row["sizes"]["queue_bytes"] for row in last)
        queue_max = max(row["sizes"]["queue_bytes"] for row in rows)
        checks.append(
            (
                "queue tables size",
                queue_last <= max(2 * queue_first, 2**20),
                f"max {queue_first / 1024:.0f} kB in the first window, {queue_last / 1024:.0f} kB "
                f"in the last, {queue_max / 1024:.0f} kB at most (goal: bounded)",
            )
        )
        for role in ("supervisor", "worker"):
            a = mean([{"v": row["rss"][role]} for row in first], "v")
            b = mean([{"v": row["rss"][role]} for row in last], "v")
            change = (b - a) / a if a else 0.0
            checks.append(
                (
                    f"{role} RSS",
                    change < 0.10,
                    f"{a:.0f} -> {b:.0f} MiB ({change:+.1%}; goal < 10 %)",
                )
            )
        recycled = [row["rss"]["worker-recycled"] for row in rows if row["rss"]["worker-recycled"]]
        if recycled:
            checks.append(
                (
                    "recycled worker RSS",
                    True,
                    f"{min(recycled):.0f}-{max(recycled):.0f} MiB (per-minute means; recycled by max_jobs)",
                )
            )
        ages = [s.heartbeat_age for s in self.state.samples if s.heartbeat_age is not None]
        worst = max(ages, default=0.0)
        checks.append(
            (
                "supervisor heartbeat",
                worst <= 2 * HEARTBEAT,
                f"oldest {worst:.1f} s (interval {HEARTBEAT:g} s; goal <= {2 * HEARTBEAT:g} s)",
            )
        )
        checks += self._ledger_checks()
        for label, ok, text in checks:
            print(f"- {'n/a ' if ok is None else 'ok  ' if ok else 'MISS'} {label}: {text}")
        if self.options.long_transactions:
            self._long_report()
        for label, plan in self.state.plans:
            print(f"\nclaim plan {label}:\n{plan}")
        if self.state.errors:
            print(f"\nerrors in this process: {dict(self.state.errors)}")
        text = self.log.read_text(errors="replace")
        # A planned failure's traceback ends with a line of its own that
        # starts with the exception (the log's "retried: ..." line names it
        # too, mid-line).
        planned = text.count("\nbench.soak_tasks.PlannedFailure:")
        print(
            f"\nsupervisor log ({self.log}): {text.count(' ERROR ')} ERROR lines, "
            f"{text.count('Traceback') - planned} tracebacks besides the {planned} planned "
            f"failures, {text.count(' WARNING ')} WARNING lines, "
            f"{text.count('Cleared')} retention summaries"
        )

    def _ledger_checks(self) -> list[tuple[str, bool, str]]:
        from django.db.models import Count

        from robust_queue.models import Job, RecurringExecution
        from testproject.models import LedgerEntry

        enqueued = self.state.enqueued
        runs: Counter[tuple[str, int]] = Counter()
        backlog_runs: Counter[str] = Counter()
        for key, attempt, n in (
            LedgerEntry.objects.exclude(key="tick")
            .values_list("key", "attempt")
            .annotate(n=Count("id"))
            .values_list("key", "attempt", "n")
        ):
            if key.startswith("b"):
                backlog_runs[key] += n
            else:
                runs[(key, attempt)] = n
        twice = sum(1 for n in runs.values() if n > 1)
        expected = {(f"s{seq}", attempt) for seq in range(enqueued) for attempt in _attempts(seq)}
        missing = len(expected - set(runs))
        extra = len(set(runs) - expected)
        soak = Job.objects.filter(id__gt=self.first_pk).exclude(task_path=f"{TASKS}.tick")
        failed = soak.filter(failed_execution__isnull=False).count()
        unfinished = soak.filter(finished_at__isnull=True, failed_execution__isnull=True).count()
        expected_failed = sum(1 for seq in range(enqueued) if seq % 100 == 0)
        ticks = LedgerEntry.objects.filter(key="tick").count()
        slots = RecurringExecution.objects.filter(task_key="soak-tick").count()
        checks = []
        if self.options.backlog:
            jobs = Job.objects.filter(id__gt=self.backlog_after, id__lte=self.first_pk)
            done = jobs.filter(finished_at__isnull=False).count()
            waiting = jobs.filter(finished_at__isnull=True, ready_execution__isnull=False).count()
            twice_b = sum(1 for n in backlog_runs.values() if n > 1)
            checks.append(
                (
                    "backlog runs",
                    twice_b == 0
                    and done == len(backlog_runs)
                    and done + waiting == self.options.backlog,
                    f"{self.options.backlog:,} backlog jobs: {done:,} finished, {len(backlog_runs):,} "
                    f"ran, {twice_b} twice, {waiting:,} still ready, "
                    f"{self.options.backlog - done - waiting} in no state",
                )
            )
        return checks + [
            (
                "runs per job",
                twice == 0 and missing == 0 and extra == 0 and unfinished == 0,
                f"{enqueued:,} jobs enqueued, {len(runs):,} (job, attempt) runs; "
                f"{missing} missing (lost), {twice} run twice, {extra} unexpected attempts; "
                f"{unfinished} unfinished after the drain; "
                f"{failed} failed for good still kept ({expected_failed} planned in all; "
                "retention clears those older than its span)",
            ),
            (
                "recurring every 10 s",
                ticks == slots,
                f"{slots} slots enqueued, {ticks} runs",
            ),
        ]

    def _long_report(self) -> None:
        samples, long = self.state.samples, self.state.long
        if not long:
            print("\nno long transaction fitted in the run")
            return

        def inside(s: Sample, start: float, end: float) -> bool:
            return start <= s.at < end

        # Baseline: after the first minute, before the first transaction.
        base = [s for s in samples if 60 <= s.at < long[0].start]
        base_claims = [s.claim_ms for s in base if s.claim_ms is not None]
        base_p95 = _percentile(base_claims, 95) or 0.0
        base_pages = _percentile([s.claim_pages for s in base if s.claim_pages is not None], 95)
        base_ready = _percentile([float(s.ready) for s in base], 99) or 0.0
        base_pickup = self._pickup_p95(60, long[0].start)
        print(
            f"\nlong transactions: baseline (60 s to {long[0].start:.0f} s): claim p95 "
            f"{base_p95:.2f} ms, {base_pages or 0} pages; ready p99 {base_ready:.0f}, "
            f"pickup p95 {base_pickup:.0f} ms"
        )
        print(
            "| # | open (s) | analytics query s | claim p95 ms (x baseline) | claim max ms "
            "| claim pages p95 (x baseline) | pickup p95 ms | ready peak "
            "| back to baseline after end | goal |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for number, record in enumerate(long, 1):
            during = [s for s in samples if inside(s, record.start, record.end)]
            claims = [s.claim_ms for s in during if s.claim_ms is not None]
            p95 = _percentile(claims, 95) or 0.0
            pages = _percentile([s.claim_pages for s in during if s.claim_pages is not None], 95)
            pages_x = f"{pages / base_pages:.1f}x" if pages and base_pages else "-"
            peak = max((s.ready for s in during), default=0)
            after = [s for s in samples if s.at >= record.end]
            back = next((s.at - record.end for s in after if s.ready <= base_ready), None)
            back_text = "never" if back is None else f"{back:.0f} s"
            ok = (p95 <= 3 * base_p95 if base_p95 else False) and back is not None and back <= 60
            print(
                f"| {number} | {record.start:.0f}-{record.end:.0f} | {record.query_s:.1f} | "
                f"{p95:.2f} ({p95 / base_p95 if base_p95 else 0:.1f}x) | "
                f"{max(claims, default=0):.1f} | {pages} ({pages_x}) | "
                f"{self._pickup_p95(record.start, record.end):.0f} | "
                f"{peak} | {back_text} | {'ok' if ok else 'MISS'} |"
            )

    def _pickup_p95(self, start: float, end: float) -> float:
        from robust_queue.models import Job

        low = self.wall0 + timedelta(seconds=start)
        high = self.wall0 + timedelta(seconds=end)
        pairs = Job.objects.filter(
            id__gt=self.first_pk,
            task_path=f"{TASKS}.work",
            run_after__isnull=True,
            started_at__gte=low,
            started_at__lt=high,
            enqueued_at__gte=low - timedelta(minutes=10),
        ).values_list("enqueued_at", "started_at")
        return _percentile([(b - a).total_seconds() * 1000 for a, b in pairs], 95) or 0.0

    # --- helpers -------------------------------------------------------------

    def _max_pk(self) -> int:
        from django.db.models import Max

        from robust_queue.models import Job

        return Job.objects.aggregate(top=Max("id"))["top"] or 0

    def _server_version(self) -> str:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            return str(cursor.fetchone()[0]).split(" on ")[0].split(",")[0]


def _call(seq: int) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The ``seq``-th job of the mix."""
    from django.utils import timezone

    from bench import soak_tasks

    key = f"s{seq}"
    if seq % 20 == 0:
        return soak_tasks.flaky, (key,), {"fails": 3 if seq % 100 == 0 else 1}
    if seq % 20 == 1:
        return soak_tasks.limited, (key, f"acct{(seq // 20) % 10}"), {}
    if seq % 10 == 2:
        later = timezone.now() + timedelta(seconds=1 + seq % 30)
        return soak_tasks.work.using(run_after=later), (key,), {}
    return soak_tasks.work, (key,), {}


def _attempts(seq: int) -> Iterator[int]:
    """The attempts the ledger should hold for the ``seq``-th job."""
    if seq % 20 == 0:
        yield from range(1, 4 if seq % 100 == 0 else 3)
    else:
        yield 1


def _values_of(data: Any, key: str) -> Iterator[int]:
    """Every value of ``key`` anywhere in JSON ``data``."""
    if isinstance(data, dict):
        for name, value in data.items():
            if name == key and isinstance(value, int | float):
                yield int(value)
            else:
                yield from _values_of(value, key)
    elif isinstance(data, list):
        for item in data:
            yield from _values_of(item, key)


def _rss(pid: int) -> float:
    """Resident MiB of ``pid`` (0 if gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0.0


def _percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def _separator(header: str) -> str:
    return "|" + "---|" * (header.count("|") - 1)


def _format(row: dict[str, Any]) -> str:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}" if value >= 10 else f"{value:.1f}"

    sizes, rss = row["sizes"], row["rss"]
    dead = (
        f"{sizes['job_dead']:,}/{sizes['ready_dead']:,}"
        if sizes["purge"] is None
        else f"hll {sizes['purge']:,}"
    )
    heartbeat = "-" if row["heartbeat_max"] is None else f"{row['heartbeat_max']:.1f}"
    claim = "-" if row["claim_p50"] is None else f"{row['claim_p50']:.2f}/{row['claim_p95']:.2f}"
    return (
        f"| {row['minute']} | {row['throughput']:.1f} | {ms(row['pickup_p50'])} | "
        f"{ms(row['pickup_p99'])} | {ms(row['late_p99'])} | "
        f"{row['ready_avg']:.0f}/{row['ready_max']} | {row['claimed_avg']:.1f} | "
        f"{sizes['job_heap'] / 2**20:.0f}+{sizes['job_index'] / 2**20:.0f} | "
        f"{sizes['queue_bytes'] / 1024:.0f} | {dead} | "
        f"{rss['supervisor']:.0f}/{rss['worker']:.0f}/{rss['worker-recycled']:.0f} | "
        f"{heartbeat} | {claim} | {ms(row['pages_p95'])} | "
        f"{ms(row['oldest'])} | {'open' if row['long'] else ''} |"
    )


if __name__ == "__main__":
    main()
