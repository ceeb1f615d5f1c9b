"""Scale-out: many supervisors, as if on many hosts, against one database.

    python -m bench.scale_out postgresql [--jobs 4000] [--supervisors 2,8]
        [--threads 4] [--reps 2]

For each count of supervisors (alternating, ``--reps`` times): enqueue
``--jobs`` no-op jobs into a paused queue, start that many
``manage.py robust_queue`` supervisors, each under a host name of its own
(``bench.as_host``) with one worker of ``--threads`` threads and a
dispatcher, resume the queue and time the drain from the jobs' own stamps.

Checked, not assumed, per run: every job finished exactly once (one
attempt in its history, no failure, no job left), which hosts did the work,
the supervisors' warnings about lock conflicts and deadlocks, and the
server's own lock statistics: on PostgreSQL ``pg_stat_database.deadlocks``
of the bench database and backends of it waiting on a lock
(``pg_stat_activity``, sampled every 20 ms); on MariaDB the InnoDB
counters (``Innodb_row_lock_waits``, ``Innodb_deadlocks``: server-wide, so
other work on the server counts too) and transactions of the bench
database in ``LOCK WAIT`` (sampled every 0.25 s: ``INNODB_TRX`` changes only after 0.1 s unread).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import ROOT, throwaway_database

CONFIG: dict[str, Any] = {
    "dispatchers": [{"batch_size": 500, "polling_interval": 0.2}],
    "process_heartbeat_interval": 5,
    "process_alive_threshold": 60,
}
# How often the lock waiters are read. InnoDB refreshes INNODB_TRX only
# once it has not been read for 0.1 s: read more often, it never changes.
SAMPLE_EVERY = {"postgresql": 0.02, "mariadb": 0.25, "sqlite": 0.02}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb", "sqlite"])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--supervisors", type=_counts, default=[2, 8])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--reps", type=int, default=2)
    options = parser.parse_args()
    with throwaway_database(options.database):
        for _ in range(options.reps):
            for count in options.supervisors:
                _run(options.database, options.jobs, count, options.threads)


def _counts(value: str) -> list[int]:
    try:
        counts = [int(part) for part in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: counts are N[,N...]") from None
    if any(count < 1 for count in counts):
        raise argparse.ArgumentTypeError(f"{value!r}: counts must be 1 or more")
    return counts


def _start(index: int, threads: int, log: Path) -> subprocess.Popen[bytes]:
    from django.conf import settings

    worker = {"queues": ["*"], "threads": threads, "processes": 1, "polling_interval": 0.1}
    env = dict(
        os.environ,
        BENCH_HOSTNAME=f"bench-host-{index}",
        ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"],
        ROBUST_QUEUE_CONFIG_JSON=json.dumps({**CONFIG, "workers": [worker]}),
        ROBUST_QUEUE_LOG_LEVEL="WARNING",
    )
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bench.as_host"], cwd=ROOT, env=env, stdout=out, stderr=out
        )


def _run(database: str, jobs: int, count: int, threads: int) -> None:
    from django.db.models import Max, Min

    import robust_queue
    from robust_queue.models import FailedExecution, Job, Pause, Process
    from testproject import tasks

    Job.objects.all().delete()
    pause = Pause.objects.create(queue_name="default")
    for start in range(0, jobs, 1000):
        robust_queue.enqueue_all(
            [(tasks.add, (i, 1), {}) for i in range(start, min(jobs, start + 1000))]
        )
    log = Path(tempfile.mkstemp(prefix="rq-scale-out-", suffix=".log")[1])
    supervisors = [_start(index, threads, log) for index in range(count)]
    try:
        while Process.objects.filter(kind="worker").count() < count:
            if any(s.poll() is not None for s in supervisors):
                raise SystemExit(f"a supervisor exited at start; its log: {log}")
            time.sleep(0.05)
        time.sleep(0.5)
        server = _server_counters(database)
        samples: list[int] = []
        pause.delete()
        while Job.objects.filter(finished_at__isnull=True).exists():
            samples.append(_waiting_on_locks(database))
            time.sleep(SAMPLE_EVERY[database])
        server = {k: v - server[k] for k, v in _server_counters(database).items()}
        hosts = Counter(
            name.split("-")[3]
            for name in Process.objects.filter(kind="worker").values_list("name", flat=True)
        )
    finally:
        for supervisor in supervisors:
            supervisor.send_signal(signal.SIGTERM)
        for supervisor in supervisors:
            supervisor.wait(timeout=60)
    span = Job.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    elapsed = (span["last"] - span["first"]).total_seconds()
    attempts = Counter(len(ids) for ids in Job.objects.values_list("worker_ids", flat=True))
    by_host = Counter(
        ids[0].split("-")[3] for ids in Job.objects.values_list("worker_ids", flat=True) if ids
    )
    finished = Job.objects.filter(finished_at__isnull=False).count()
    failed = FailedExecution.objects.count()
    warnings = log.read_text(errors="replace").lower()
    log.unlink()
    once = attempts == Counter({1: jobs}) and finished == jobs and failed == 0
    waiting = sum(1 for n in samples if n)
    print(
        f"{database:10} {count} supervisors x 1 worker x {threads} threads "
        f"({len(hosts)} hosts registered): {jobs / elapsed:6.0f} jobs/s; "
        f"each job finished exactly once: {'yes' if once else f'NO {dict(attempts)}'} "
        f"(finished {finished}/{jobs}, failed {failed}); "
        f"jobs per host {sorted(by_host.values())}; "
        f"log lines naming deadlocks {warnings.count('deadlock')}, "
        f"lock conflicts {warnings.count('lock conflict')}; "
        f"server: {', '.join(f'{k} {v}' for k, v in server.items())}; "
        f"lock waits seen in {waiting}/{len(samples)} samples "
        f"(max {max(samples, default=0)} waiting at once)"
    )
    if not once:
        raise SystemExit("a job ran more than once, failed or was left: see above")


def _server_counters(database: str) -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        if database == "postgresql":
            cursor.execute(
                "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
            )
            return {"deadlocks": int(cursor.fetchone()[0])}
        if database == "mariadb":
            cursor.execute(
                "SHOW GLOBAL STATUS WHERE Variable_name IN "
                "('Innodb_row_lock_waits', 'Innodb_deadlocks', 'Innodb_row_lock_time')"
            )
            return {name: int(value) for name, value in cursor.fetchall()}
    return {}


def _waiting_on_locks(database: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        if database == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        elif database == "mariadb":
            cursor.execute(
                "SELECT count(*) FROM information_schema.INNODB_TRX t "
                "JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id "
                "WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()"
            )
        else:
            return 0
        return int(cursor.fetchone()[0])


if __name__ == "__main__":
    main()
