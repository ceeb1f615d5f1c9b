"""Is Robust Queue healthy here? The checks behind ``robust_queue health``.

Each check is named and says why it failed. The database must answer and
hold Robust Queue's migrations; this host's supervisor must be alive (its
pidfile's process, or a supervisor row of this host with a fresh
heartbeat); this host's processes must heartbeat; no queue with ready jobs
may lack a live worker whose selector covers it (paused queues excepted).
The database server's upkeep is reported (``table_health.py``): dead rows
in the queue tables and the oldest open transaction, a warning above the
settings and a failure above the command's thresholds.
Thresholds add checks: the oldest ready job of a queue no older than
``max_latency``, and, with ``require_workers``, a live worker for every
named queue (or at all). Stale processes of other hosts are reported but
do not fail this host's check: their supervisor, or any other, prunes them.
A worker queue that no task uses (start-up warning W020: the selectors of
``ROBUST_QUEUE["workers"]`` and of the live workers) is a warning, and a
failed ``worker_queues`` check with ``fail_on_unused_queues``.
"""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import DatabaseError, connections

from ..models import Pause, Process, ProcessKind, Queue, ReadyExecution
from ..processes import unresponsive
from ..processes.config import SupervisorConfig
from ..processes.pidfile import Pidfile, pid_alive
from . import table_health, worker_queues
from .startup import format_message, unapplied_migrations


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    max_latency: float | None = None
    queues: tuple[str, ...] = ()
    require_workers: bool = False
    # A host that only enqueues runs no supervisor.
    check_supervisor: bool = True
    fail_on_unused_queues: bool = False
    # The server's upkeep (table_health.py): fail above these.
    max_dead_tuple_ratio: float | None = None
    max_transaction_age: float | None = None


@dataclass(slots=True)
class Report:
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unused_worker_queues: list[str] = field(default_factory=list)
    # What table_health read: dead rows, the oldest transaction, purge lag.
    table_health: dict[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return all(check.ok for check in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))

    def as_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "checks": [asdict(check) for check in self.checks],
            "warnings": list(self.warnings),
            "unused_worker_queues": list(self.unused_worker_queues),
            "table_health": dict(self.table_health),
        }


def check(config: SupervisorConfig, thresholds: Thresholds) -> Report:
    report = Report()
    using = config.database
    if not _database(report, using) or not _migrations(report, using):
        return report
    live = _live_processes(using, config.alive_threshold)
    if thresholds.check_supervisor:
        _supervisor(report, config, live)
    _heartbeats(report, using, config.alive_threshold)
    _children(report, config, live)
    _queues(report, using, live, thresholds)
    _table_health(report, using, thresholds)
    _unused_queues(report, config, live, thresholds.fail_on_unused_queues)
    return report


def _database(report: Report, using: str) -> bool:
    try:
        with connections[using].cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        report.add("database", False, f"database {using!r} is unreachable: {exc}")
        return False
    vendor = connections[using].display_name
    report.add("database", True, f"database {using!r} ({vendor}) answers")
    return True


def _migrations(report: Report, using: str) -> bool:
    try:
        missing = unapplied_migrations(using)
    except DatabaseError as exc:
        report.add("migrations", False, f"cannot read applied migrations: {exc}")
        return False
    if missing:
        report.add(
            "migrations",
            False,
            f"{len(missing)} migration(s) not applied: {', '.join(missing)} "
            "(run manage.py migrate)",
        )
        return False
    report.add("migrations", True, "every Robust Queue migration is applied")
    return True


def _live_processes(using: str, threshold: float) -> list[Process]:
    return list(Process.objects.using(using).alive(threshold))


def _supervisor(report: Report, config: SupervisorConfig, live: list[Process]) -> None:
    host = socket.gethostname()
    if config.pidfile:
        pid = Pidfile(config.pidfile).read()
        if pid is None:
            report.add("supervisor", False, f"no supervisor pid in {config.pidfile}")
        elif not pid_alive(pid):
            report.add(
                "supervisor", False, f"the supervisor of {config.pidfile} (pid {pid}) is gone"
            )
        else:
            report.add("supervisor", True, f"supervisor pid {pid} ({config.pidfile}) is alive")
        return
    mine = [p for p in live if p.kind == ProcessKind.SUPERVISOR and p.hostname == host]
    if mine:
        names = ", ".join(f"{p.name} (pid {p.pid})" for p in mine)
        report.add("supervisor", True, f"supervisor alive on {host}: {names}")
    else:
        report.add(
            "supervisor",
            False,
            f"no supervisor on {host} has heartbeaten within {config.alive_threshold:g}s",
        )


def _heartbeats(report: Report, using: str, threshold: float) -> None:
    host = socket.gethostname()
    stale = list(Process.objects.using(using).stale(threshold).order_by("hostname", "name"))
    here = [p for p in stale if p.hostname == host]
    elsewhere = [p for p in stale if p.hostname != host]
    for process in elsewhere:
        report.warnings.append(
            f"{process.kind} {process.name} on {process.hostname} has not "
            f"heartbeaten within {threshold:g}s (it will be pruned)"
        )
    if here:
        names = ", ".join(f"{p.kind} {p.name} (pid {p.pid})" for p in here)
        report.add(
            "heartbeats",
            False,
            f"process(es) on {host} silent for more than {threshold:g}s: {names}",
        )
    else:
        report.add("heartbeats", True, f"every process on {host} heartbeats")


def _children(report: Report, config: SupervisorConfig, live: list[Process]) -> None:
    """Each live supervisor of this host runs its configured children, and
    none has stopped heartbeating: checked whatever the queues hold."""
    host = socket.gethostname()
    mine = [p for p in live if p.kind == ProcessKind.SUPERVISOR and p.hostname == host]
    rows = Process.objects.using(config.database).filter(supervisor__in=mine)
    children = list(rows.with_liveness(config.alive_threshold).order_by("kind", "name"))
    found = [
        problem
        for supervisor in mine
        for problem in unresponsive.problems(
            supervisor,
            [c for c in children if c.supervisor_id == supervisor.pk],
            config.heartbeat_interval,
        )
    ]
    if found:
        report.add("children", False, "; ".join(found))
    else:
        report.add("children", True, f"every supervisor on {host} runs its children")


def covers(selectors: Any, queue: str) -> bool:
    """Whether a worker with these selectors (from its row) polls ``queue``."""
    if isinstance(selectors, str):
        selectors = [selectors]
    if not isinstance(selectors, list):
        return False
    return any(
        isinstance(s, str)
        and (s == "*" or s == queue or (s.endswith("*") and queue.startswith(s[:-1])))
        for s in selectors
    )


def _queues(report: Report, using: str, live: list[Process], thresholds: Thresholds) -> None:
    workers = [p for p in live if p.kind == ProcessKind.WORKER]
    selectors = [
        (p.metadata.get("queues", ["*"]) if isinstance(p.metadata, dict) else ["*"])
        for p in workers
    ]
    paused = set(Pause.objects.using(using).values_list("queue_name", flat=True))
    with_jobs = set(ReadyExecution.objects.using(using).queue_names())
    named = set(thresholds.queues)
    watched = named or with_jobs
    uncovered = sorted(
        name
        for name in watched & with_jobs
        if name not in paused and not any(covers(s, name) for s in selectors)
    )
    if uncovered:
        report.add(
            "queues",
            False,
            "ready jobs and no live worker for queue(s): " + ", ".join(uncovered),
        )
    else:
        report.add("queues", True, "every queue with ready jobs has a live worker")
    if thresholds.require_workers:
        _require_workers(report, named, selectors)
    if thresholds.max_latency is not None:
        _latency(report, using, sorted(watched), thresholds.max_latency)


def _require_workers(report: Report, named: set[str], selectors: list[Any]) -> None:
    if not named:
        ok = bool(selectors)
        report.add("workers", ok, f"{len(selectors)} live worker(s)" if ok else "no live worker")
        return
    missing = sorted(name for name in named if not any(covers(s, name) for s in selectors))
    if missing:
        report.add("workers", False, "no live worker polls queue(s): " + ", ".join(missing))
    else:
        report.add("workers", True, "a live worker polls " + ", ".join(sorted(named)))


def _latency(report: Report, using: str, names: list[str], limit: float) -> None:
    late = []
    for name in names:
        seconds = Queue(name, using).latency().total_seconds()
        if seconds > limit:
            late.append(f"{name} ({seconds:.0f}s)")
    if late:
        report.add(
            "latency",
            False,
            f"oldest ready job older than {limit:g}s in: " + ", ".join(late),
        )
    else:
        report.add("latency", True, f"no queue waits longer than {limit:g}s")


def _table_health(report: Report, using: str, thresholds: Thresholds) -> None:
    upkeep = table_health.check(
        using, thresholds.max_dead_tuple_ratio, thresholds.max_transaction_age
    )
    for name, ok, detail in upkeep.checks:
        report.add(name, ok, detail)
    report.warnings += upkeep.warnings
    report.table_health = upkeep.data


def _unused_queues(
    report: Report, config: SupervisorConfig, live: list[Process], fail: bool
) -> None:
    messages = worker_queues.unused(config, live)
    report.unused_worker_queues = [str(message.obj) for message in messages]
    report.warnings += [format_message(message).replace("\n    ", " ") for message in messages]
    if fail:
        names = ", ".join(report.unused_worker_queues)
        report.add(
            "worker_queues",
            not messages,
            f"worker queue(s) that no task uses: {names}"
            if messages
            else "every worker queue is used by a task",
        )
