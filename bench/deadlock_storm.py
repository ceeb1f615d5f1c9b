"""A lock storm: workers claim while bulk discards, retries and retention
delete, and how many deadlocks it causes.

    python -m bench.deadlock_storm mariadb [--minutes 3]

Starts `manage.py robust_queue` (2 worker processes x 3 threads, one
dispatcher) against a throw-away database, and in this process runs four
threads for ``--minutes``: an enqueuer (ready jobs, failing jobs, jobs with
a concurrency key), the admin's bulk discard over the newest jobs, the
admin's bulk retry of failed jobs, and retention clearing finished and
failed jobs. Reports the server's ``Innodb_deadlocks`` counter before/after
(server-wide: other clients of the same server count too), the deadlocks
each caller saw, the worker's logged database errors (tracebacks) and
one-line deadlock retries, and whether any job was lost or duplicated.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from bench.common import start_supervisor, throwaway_database

CONFIG = {
    "workers": [{"queues": ["*"], "threads": 3, "processes": 2, "polling_interval": 0.05}],
    "dispatchers": [{"batch_size": 500, "polling_interval": 0.2}],
    "process_heartbeat_interval": 5,
    "process_alive_threshold": 60,
}
# The enqueuer waits while this many jobs are unfinished.
BACKLOG = 3000
DEADLOCK_CODES = (1213, 1205)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", choices=["mariadb", "postgresql"])
    parser.add_argument("--minutes", type=float, default=3.0)
    options = parser.parse_args()
    with throwaway_database(options.database):
        _storm(options.database, options.minutes * 60)


def _storm(database: str, seconds: float) -> None:
    log = Path(tempfile.gettempdir()) / f"deadlock_storm_{os.getpid()}.log"
    before = _server_deadlocks()
    supervisor = _start(log)
    stop = threading.Event()
    counts: Counter[str] = Counter()
    loops = [_enqueue, _discard, _retry, _retain]
    threads = [threading.Thread(target=_loop, args=(loop, stop, counts)) for loop in loops]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    supervisor.send_signal(signal.SIGTERM)
    supervisor.wait(timeout=60)
    after = _server_deadlocks()
    text = log.read_text(errors="replace")
    print(f"{database}: {seconds / 60:.1f} min storm")
    print(f"  server deadlock counter: {before} -> {after} (+{_delta(before, after)})")
    print(
        f"  operations run: {dict(sorted((k, v) for k, v in counts.items() if k.startswith('ok ')))}"
    )
    print(
        f"  deadlocks reaching callers: {dict(sorted((k, v) for k, v in counts.items() if not k.startswith('ok ')))}"
    )
    print(
        f"  worker log: {text.count('database error; retrying')} database-error tracebacks, "
        f"{text.count('Deadlock found')} 'Deadlock found' mentions, "
        f"{text.count('retrying in')} one-line lock-conflict retries, "
        f"{text.count('gave up after')} give-ups; "
        f"{text.count('state=FAILED')} runs of the failing task (work done)"
    )
    print(f"  consistency: {_consistency()}")
    print(f"  worker log kept in {log}")


def _loop(body: Callable[[], None], stop: threading.Event, counts: Counter[str]) -> None:
    from django.db import DatabaseError, connections

    name = body.__name__.strip("_")
    try:
        while not stop.is_set():
            try:
                body()
                counts[f"ok {name}"] += 1
            except DatabaseError as exc:
                code = exc.args[0] if exc.args else None
                counts[
                    f"{name} {code}" if code in DEADLOCK_CODES else f"{name} other {exc!r:.80}"
                ] += 1
                connections["default"].close()
    finally:
        connections.close_all()


def _enqueue() -> None:
    import robust_queue
    from robust_queue.models import Job
    from testproject import tasks

    if Job.objects.filter(finished_at__isnull=True).count() > BACKLOG:
        time.sleep(0.2)
        return
    calls = [(tasks.add, (i, 1), {}) for i in range(40)]
    calls += [(tasks.fail, ("storm",), {}) for _ in range(10)]
    robust_queue.enqueue_all(calls)
    time.sleep(0.05)


def _discard() -> None:
    from robust_queue.models import Job
    from robust_queue.operations import bulk as operations

    newest = Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    low = newest - random.randint(50, 400)
    # Bounded: an open window would chase the enqueuer's new jobs.
    operations.discard(Job.objects.filter(pk__gt=low, pk__lte=newest), size=100)
    time.sleep(0.05)


def _retry() -> None:
    from robust_queue.models import Job
    from robust_queue.operations import bulk as operations

    operations.retry(Job.objects.failed(), size=100)
    time.sleep(0.1)


def _retain() -> None:
    from robust_queue.models.retention import Retention

    Retention(
        finished_older_than=timedelta(0),
        failed_older_than=timedelta(seconds=1),
        batch_size=100,
    ).clear("default")
    time.sleep(0.05)


def _start(log: Path) -> subprocess.Popen[bytes]:
    return start_supervisor(CONFIG, level="INFO", log=log)


def _server_deadlocks() -> int | None:
    from django.db import connection

    if connection.vendor == "mysql":
        sql = "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'"
    else:
        sql = "SELECT deadlocks, 0 FROM pg_stat_database WHERE datname = current_database()"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        row = cursor.fetchone()
    connection.close()
    return int(row[1] if connection.vendor == "mysql" else row[0])


def _delta(before: int | None, after: int | None) -> int | str:
    return "?" if before is None or after is None else after - before


def _consistency() -> str:
    """Lost: unfinished jobs in no state. Duplicated: in two at once."""
    from django.db.models import Q

    from robust_queue.models import Job

    states = [
        "ready_execution",
        "scheduled_execution",
        "claimed_execution",
        "blocked_execution",
        "failed_execution",
    ]
    none = Q(finished_at__isnull=True)
    for state in states:
        none &= Q(**{f"{state}__isnull": True})
    lost = Job.objects.filter(none).count()
    doubled = sum(
        Job.objects.filter(**{f"{a}__isnull": False, f"{b}__isnull": False}).count()
        for i, a in enumerate(states)
        for b in states[i + 1 :]
    )
    finished_and_live = sum(
        Job.objects.filter(finished_at__isnull=False, **{f"{s}__isnull": False}).count()
        for s in states
    )
    return (
        f"{Job.objects.count()} jobs left, {lost} lost, {doubled} in two states, "
        f"{finished_and_live} finished with a live execution"
    )


if __name__ == "__main__":
    main()
