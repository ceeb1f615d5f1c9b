"""What an idle supervisor costs the database, and pickup after idling.

    python -m bench.idle {postgresql,mariadb} [--seconds 30] [--ceiling 2.0]

Starts `manage.py robust_queue` with workers only (no dispatcher, no
scheduler: they poll on their own schedules) against a throw-away database
with no jobs, waits for the idle back-off to settle, then counts the
transactions the database committed for that database over ``--seconds``
(PostgreSQL: ``pg_stat_database.xact_commit + xact_rollback``; every claim
poll is one transaction), or, on MariaDB, the commands the supervisor's
processes sent through a counting proxy (``bench.statement_proxy``: the
server's own counters are server-wide). It does so for one worker on ``*``
and for one worker on four named queues, with the supervisor tree's CPU
over the same window (SQLite: that CPU only). ``--ceiling 0.1`` (the polling
interval) is the behaviour before the back-off; ``--ceiling none`` leaves
the key out (code older than the back-off). Then, with the back-off
settled, it enqueues one job at a time and reports how long each waited to
start.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from bench.common import ROOT, cpu_of, process_tree, throwaway_database
from bench.statement_proxy import StatementProxy

SETTLE = 8.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["postgresql", "mariadb", "sqlite"])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--ceiling", type=_ceiling, default=2.0, help="seconds, or none")
    parser.add_argument("--samples", type=int, default=5)
    options = parser.parse_args()
    with throwaway_database(options.database):
        for queues in (["*"], ["a", "b", "c", "d"]):
            proxy = _proxy() if options.database == "mariadb" else None
            supervisor = _start(queues, options.ceiling, proxy)
            time.sleep(SETTLE)
            label = (
                f"{options.database:10} ceiling {options.ceiling} s, queues {','.join(queues):8}"
            )
            cpu_before = cpu_of(process_tree(supervisor.pid))
            started = time.monotonic()
            if options.database == "postgresql":
                rate = _transactions_per_second(options.seconds)
                print(f"{label}: {rate:6.1f} transactions/s (whole supervisor)")
            elif proxy is not None:
                print(f"{label}: {_statements_per_second(proxy, options.seconds)}")
            else:
                time.sleep(options.seconds)
            spent = cpu_of(process_tree(supervisor.pid)) - cpu_before
            per_second = spent / os.sysconf("SC_CLK_TCK") / (time.monotonic() - started)
            print(f"{label}: supervisor tree CPU {per_second * 1000:.1f} ms/s")
            if queues == ["*"]:
                _pickup(options.database, options.ceiling, options.samples)
            _stop(supervisor)


def _ceiling(value: str) -> float | None:
    return None if value == "none" else float(value)


def _proxy() -> StatementProxy:
    from django.conf import settings

    database = settings.DATABASES["default"]
    proxy = StatementProxy(database["HOST"], int(database["PORT"]))
    proxy.start()
    return proxy


def _start(
    queues: list[str], ceiling: float | None, proxy: StatementProxy | None
) -> subprocess.Popen[bytes]:
    from django.conf import settings

    worker: dict[str, object] = {"queues": queues, "threads": 3, "polling_interval": 0.1}
    if ceiling is not None:
        worker["idle_polling_ceiling"] = ceiling
    config = {
        "workers": [worker],
        "dispatchers": [],
        "scheduler": False,
        "process_heartbeat_interval": 60,
        "process_alive_threshold": 300,
    }
    env = dict(
        os.environ,
        ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"],
        ROBUST_QUEUE_CONFIG_JSON=json.dumps(config),
        ROBUST_QUEUE_LOG_LEVEL="WARNING",
    )
    if proxy is not None:
        env["MYSQL_PORT"] = str(proxy.port)
    return subprocess.Popen([sys.executable, "manage.py", "robust_queue"], cwd=ROOT, env=env)


def _stop(supervisor: subprocess.Popen[bytes]) -> None:
    supervisor.send_signal(signal.SIGTERM)
    supervisor.wait(timeout=30)


def _transactions_per_second(seconds: float) -> float:
    start = _transactions()
    time.sleep(seconds)
    # The server publishes a backend's counts within a second or so.
    time.sleep(1.5)
    return (_transactions() - start) / seconds


def _statements_per_second(proxy: StatementProxy, seconds: float) -> str:
    start = proxy.counts()
    time.sleep(seconds)
    counts = proxy.counts()
    counts.subtract(start)
    kinds = ", ".join(f"{kind} {n / seconds:.1f}" for kind, n in counts.most_common() if n)
    return f"{counts.total() / seconds:6.1f} statements/s (whole supervisor: {kinds})"


def _transactions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database "
            "WHERE datname = current_database()"
        )
        return int(cursor.fetchone()[0])


def _pickup(database: str, ceiling: float | None, samples: int) -> None:
    from robust_queue.models import Job
    from testproject import tasks

    delays = []
    for _ in range(samples):
        time.sleep(SETTLE)  # idle long enough for the back-off to reach the ceiling
        result = tasks.add.enqueue(1, 1)
        while not (
            job := Job.objects.filter(result_id=result.id, started_at__isnull=False).first()
        ):
            time.sleep(0.002)
        delays.append((job.started_at - job.enqueued_at).total_seconds() * 1000)
    print(
        f"{database:10} ceiling {ceiling} s: pickup after {SETTLE:.0f} s idle: "
        f"median {statistics.median(delays):.0f} ms, max {max(delays):.0f} ms "
        f"({samples} samples)"
    )


if __name__ == "__main__":
    main()
