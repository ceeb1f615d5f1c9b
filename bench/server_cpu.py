"""The database server's CPU over a no-op job's life, per step.

    python -m bench.server_cpu {postgresql,mariadb} [--jobs 2000] [--rounds 3]

Each round, in one process: ``--jobs`` single ``enqueue()`` calls
(autocommit), the same number enqueued by ``enqueue_all`` in chunks of
1,000, then all of them worked off in-process as ``bench.worker_cpu``
does (claim, perform, finish), with claims of one job and of three, and
as a worker's finisher writes three threads' successes (``finish_all``,
with the next three claims in the same commit). Each
step reports the CPU of this session's own server process (PostgreSQL: the
backend of ``pg_backend_pid()``; MariaDB: the server thread of
``information_schema.PROCESSLIST.TID``), so other sessions on a shared
server do not count, and the CPU of every server process beside it
(background writers, WAL, purge — and, on a shared machine, everyone
else's work). The first is the floor a job costs the server; the second
its ceiling on a quiet machine. Prints each round and the medians.

Beside the CPU, what each step made the server write, per job: rows
inserted, updated and deleted (PostgreSQL: this database's
``pg_stat_user_tables``, its counters flushed by this session before each
read; MariaDB: this session's ``Handler_write``, ``Handler_update`` and
``Handler_delete``, which count row writes of its own statements, internal
temporary tables included), and on PostgreSQL the WAL bytes the server
wrote meanwhile (``pg_current_wal_insert_lsn``: the whole server's, so
only a quiet server gives this database's alone). Row counts are exact
whatever else the machine does.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from pathlib import Path

from bench.common import cpu_of, server_pids, throwaway_database

STEPS = ("enqueue", "enqueue_all", "claim 1 + finish", "claim 3 + finish", "3 finished together")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb"])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _run(options.database, options.jobs, options.rounds)


def _run(database: str, jobs: int, rounds: int) -> None:
    results: dict[str, list[tuple[float, float]]] = {step: [] for step in STEPS}
    writes: dict[str, list[Writes]] = {step: [] for step in STEPS}
    for number in range(1, rounds + 1):
        for step, run in zip(STEPS, _steps(jobs), strict=True):
            before = _writes()
            own, whole, done = _server_cost(run)
            written = (_writes() - before) / done
            results[step].append((own, whole))
            writes[step].append(written)
            print(
                f"round {number}: {step:18} {own:6.0f} µs own session, {whole:6.0f} µs all "
                f"server processes per job; {written}"
            )
    print(f"{database}, medians of {rounds} rounds of {jobs} jobs (µs of server CPU per job):")
    for step, pairs in results.items():
        own = statistics.median(pair[0] for pair in pairs)
        whole = statistics.median(pair[1] for pair in pairs)
        print(
            f"  {step:18} own session {own:6.0f}, all server processes {whole:6.0f}; "
            f"{Writes.median(writes[step])}"
        )


class Writes:
    """Rows inserted, updated and deleted, and WAL bytes (PostgreSQL)."""

    def __init__(self, inserted: float, updated: float, deleted: float, wal: float | None) -> None:
        self.inserted, self.updated, self.deleted, self.wal = inserted, updated, deleted, wal

    def __sub__(self, other: Writes) -> Writes:
        wal = None if self.wal is None or other.wal is None else self.wal - other.wal
        return Writes(
            self.inserted - other.inserted,
            self.updated - other.updated,
            self.deleted - other.deleted,
            wal,
        )

    def __truediv__(self, jobs: int) -> Writes:
        wal = None if self.wal is None else self.wal / jobs
        return Writes(self.inserted / jobs, self.updated / jobs, self.deleted / jobs, wal)

    def __str__(self) -> str:
        rows = f"rows {self.inserted:.2f} in + {self.updated:.2f} up + {self.deleted:.2f} del"
        return rows if self.wal is None else f"{rows}, WAL {self.wal:,.0f} B (server-wide)"

    @staticmethod
    def median(samples: list[Writes]) -> Writes:
        def middle(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return statistics.median(known) if known else None

        return Writes(
            statistics.median(w.inserted for w in samples),
            statistics.median(w.updated for w in samples),
            statistics.median(w.deleted for w in samples),
            middle([w.wal for w in samples]),
        )


def _writes() -> Writes:
    """The row writes counted so far (see the module's docstring)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # This session's counters reach the shared statistics at once.
            cursor.execute("SELECT pg_stat_force_next_flush()")
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), "
                "coalesce(sum(n_tup_del), 0), pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') "
                "FROM pg_stat_user_tables"
            )
            inserted, updated, deleted, wal = cursor.fetchone()
            return Writes(float(inserted), float(updated), float(deleted), float(wal))
        cursor.execute(
            "SHOW SESSION STATUS WHERE Variable_name IN "
            "('Handler_write', 'Handler_update', 'Handler_delete')"
        )
        status = {name: float(value) for name, value in cursor.fetchall()}
        return Writes(
            status["Handler_write"], status["Handler_update"], status["Handler_delete"], None
        )


def _steps(jobs: int) -> list[Callable[[], int]]:
    import robust_queue
    from robust_queue.models import ReadyExecution
    from robust_queue.running.performing import perform
    from testproject import tasks

    def single() -> int:
        for i in range(jobs):
            tasks.add.enqueue(i, 1)
        return jobs

    def bulk() -> int:
        # Twice over: the three steps that work jobs off take all of them.
        for start in range(0, 2 * jobs, 1000):
            batch = range(start, min(start + 1000, 2 * jobs))
            robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in batch])
        return 2 * jobs

    from robust_queue.models.statistics import recorder

    def work_off(size: int) -> Callable[[], int]:
        def run() -> int:
            # Statistics kept in memory and flushed as a worker does.
            recorder.start_buffering()
            done = 0
            while done < jobs and (
                rows := ReadyExecution.objects.claim(size, process_id=None, worker_id="bench")
            ):
                for row in rows:
                    perform(row)
                    done += 1
                recorder.flush_if_due()
            recorder.stop_buffering()
            return done

        return run

    def together() -> int:
        # What a worker's finisher writes for 3 threads: 3 successes and the
        # next 3 claims in one commit (finish_all), the bodies run as such.
        from robust_queue.models import ClaimedExecution, NextClaim

        recorder.start_buffering()
        done = 0
        rows = ReadyExecution.objects.claim(3, process_id=None, worker_id="bench")
        while rows:
            values = [tasks.add.call(*row.job.arguments["args"]) for row in rows]
            limit = max(0, min(3, jobs - done - len(rows)))
            then = NextClaim(None, (), None, None, "bench", limit=limit)
            done += sum(ClaimedExecution.finish_all(list(zip(rows, values, strict=True)), then))
            rows = then.claimed
            recorder.flush_if_due()
        recorder.stop_buffering()
        return done

    return [single, bulk, work_off(1), work_off(3), together]


def _server_cost(run: Callable[[], int]) -> tuple[float, float, int]:
    """µs of server CPU per job: this session's server process or thread,
    and every server process; and the number of jobs."""
    own_stat = _own_server_stat()
    every = server_pids()
    own_before, every_before = _ticks(own_stat), cpu_of(every)
    done = run()
    own, whole = _ticks(own_stat) - own_before, cpu_of(every) - every_before
    per_tick = 1_000_000 / os.sysconf("SC_CLK_TCK") / done
    return own * per_tick, whole * per_tick, done


def _own_server_stat() -> Path:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_backend_pid()")
            return Path(f"/proc/{cursor.fetchone()[0]}/stat")
        cursor.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        tid = cursor.fetchone()[0]
    (server,) = [pid for pid in server_pids() if Path(f"/proc/{pid}/task/{tid}").exists()]
    return Path(f"/proc/{server}/task/{tid}/stat")


def _ticks(stat: Path) -> int:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


if __name__ == "__main__":
    main()
