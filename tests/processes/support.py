"""Running the real supervisor (`manage.py robust_queue`) in a subprocess.

The output of every supervisor (its children's too: they share its stdout)
is kept in ``KEPT_LOGS`` when the test cleans up, and ``conftest.py`` adds
it to the report of a test that failed. A supervisor still running then
first prints each of its processes' Python stacks (``SIGUSR2``, see
``testproject/apps.py``), and the database's sessions are added: a test
that timed out shows where every process was and what it waited for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django.test import TransactionTestCase

from robust_queue.models import Process
from testproject.apps import STACKS
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]

# Every process a test of this run starts inherits this variable (through
# os.environ), and only processes that carry it are this run's to kill: a
# run beside this one (another CI cell) may name a test database the same
# on another server (311/postgresql-processes and 311/mariadb-processes
# both use test_robust_queue_311p), so the database's name alone is not
# enough. With it alone, one cell's end-of-run sweep killed a supervisor
# the other cell's test was waiting on.
SESSION_VARIABLE = "ROBUST_QUEUE_TEST_SESSION"
os.environ.setdefault(SESSION_VARIABLE, str(os.getpid()))
SESSION_MARK = f"{SESSION_VARIABLE}={os.environ[SESSION_VARIABLE]}".encode()

FAST = {
    "workers": [{"queues": ["*"], "threads": 3, "polling_interval": 0.05}],
    "dispatchers": [{"batch_size": 100, "polling_interval": 0.1}],
    "process_heartbeat_interval": 0.5,
    "process_alive_threshold": 10,
    "shutdown_timeout": 3,
}


# Set, every worker the tests start takes this finish_batch (1: each thread
# writes its own successes, as before batching), unless the test says.
FINISH_BATCH = os.environ.get("ROBUST_QUEUE_TEST_FINISH_BATCH")


def _with_finish_batch(config: dict[str, Any]) -> dict[str, Any]:
    if not FINISH_BATCH:
        return config
    workers = [
        {"finish_batch": int(FINISH_BATCH), **worker} for worker in config.get("workers", ())
    ]
    return {**config, "workers": workers} if workers else config


# (pid, output) of the supervisors the current test started.
KEPT_LOGS: list[tuple[int, str]] = []


class Supervisor:
    """One `manage.py robust_queue` subprocess, killed at test cleanup."""

    def __init__(
        self,
        test: TransactionTestCase,
        *args: str,
        python_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        using: str = "default",
        new_session: bool = False,
        **config: Any,
    ) -> None:
        # The child writes here for its whole life; kill() closes it.
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
        self.using = using
        environment = {
            **os.environ,
            "ROBUST_QUEUE_DB_NAME": settings.DATABASES["default"]["NAME"],
            "ROBUST_QUEUE_CONFIG_JSON": json.dumps(_with_finish_batch({**FAST, **config})),
            "ROBUST_QUEUE_DEBUG": "0",
            STACKS: "1",
            **(env or {}),
        }
        self.marker = f"ROBUST_QUEUE_DB_NAME={environment['ROBUST_QUEUE_DB_NAME']}"
        self.popen = subprocess.Popen(
            [sys.executable, *python_args, "manage.py", "robust_queue", *args],
            cwd=ROOT,
            env=environment,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=new_session,
        )
        test.addCleanup(self.kill)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def send(self, signum: int) -> None:
        self.popen.send_signal(signum)

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout=timeout)

    def output(self) -> str:
        return Path(self.log.name).read_text()

    def children(self, kind: str = "worker", count: int = 1) -> list[Process]:
        """Wait until ``count`` registered children of ``kind`` exist."""

        def found() -> list[Process]:
            rows = list(
                Process.objects.using(self.using)
                .filter(kind=kind, supervisor__pid=self.pid)
                .order_by("pk")
            )
            return rows if len(rows) >= count else []

        return wait_until(found, timeout=30)  # type: ignore[return-value]

    def kill(self) -> None:
        if self.popen.returncode is not None and not os.path.exists(self.log.name):
            return
        # Until it is reaped, the supervisor's pid cannot be reused.
        ours = [*child_pids(self.pid), self.pid] if self.popen.poll() is None else []
        # How it ended, if it did before cleanup (-9: killed by SIGKILL).
        ended = (
            "" if ours else f"\n--- it had ended before cleanup: status {self.popen.returncode} ---"
        )
        try:
            rows = Process.objects.using(self.using).filter(supervisor__pid=self.pid)
            # A row may outlive its process, and its pid may now be another
            # test run's: only processes started for this database.
            ours += [p.pid for p in rows if self._started_here(p.pid)]
        except DatabaseError:  # a private server already stopped
            pass
        ours = list(dict.fromkeys(ours))
        sessions = self._stacks_and_sessions(ours) if ours else ""
        for pid in ours:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.log.close()
        if os.path.exists(self.log.name):
            KEPT_LOGS.append((self.pid, self.output() + ended + sessions))
            if os.environ.get("RQ_KEEP_LOGS"):
                print(self.output() + ended + sessions)
            os.unlink(self.log.name)

    def _stacks_and_sessions(self, pids: list[int]) -> str:
        """Have ``pids`` print their stacks into the output, one after the
        other (their writes would interleave), a second each at most;
        return the database's sessions as text."""
        for pid in pids:
            self._print_stacks(pid)
        try:
            queries = SESSION_QUERIES.get(connections[self.using].vendor, [])
            return "\n".join(["--- database sessions at cleanup ---", *_rows(self.using, queries)])
        except DatabaseError as exc:
            return f"--- database sessions at cleanup: unreadable ({exc}) ---"

    def _print_stacks(self, pid: int) -> None:
        log = Path(self.log.name)
        marks = self.output().count(STACK_MARK)
        try:
            os.kill(pid, signal.SIGUSR2)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + 1
        size, still_since = log.stat().st_size, time.monotonic()
        # Printed once its header is there and the output has stopped growing.
        while time.monotonic() < deadline:
            grown = log.stat().st_size
            if grown != size:
                size, still_since = grown, time.monotonic()
            elif self.output().count(STACK_MARK) > marks and time.monotonic() - still_since > 0.05:
                return
            time.sleep(0.01)

    def _started_here(self, pid: int) -> bool:
        try:
            environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return False
        return self.marker.encode() in environment and SESSION_MARK in environment

    def snapshot(self) -> str:
        """What the supervisor and its children are doing now: output, each
        process's state and kernel wait channel, and the database server's
        sessions and what they wait for (for a test that timed out)."""
        lines = [f"--- supervisor {self.pid} output ---", self.output(), "--- processes ---"]
        for pid in [self.pid, *child_pids(self.pid)]:
            lines.append(f"{pid}: {_proc_state(pid)}")
        queries = SESSION_QUERIES.get(connections[self.using].vendor, [])
        lines += ["--- database sessions ---", *_rows(self.using, queries)]
        return "\n".join(lines)


def _proc_state(pid: int) -> str:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError as exc:
        return f"unreadable ({exc})"
    return f"state {state}, waiting in {wchan or '-'}"


# faulthandler's header for the thread that received the signal: one per
# process that printed its stacks.
STACK_MARK = "Current thread 0x"

SESSION_QUERIES = {
    "mysql": [
        "SELECT id, command, time, state, info FROM information_schema.processlist "
        "WHERE db = DATABASE()",
        "SELECT * FROM information_schema.innodb_lock_waits",
        "SELECT trx.trx_mysql_thread_id, trx.trx_state, trx.trx_started, "
        "trx.trx_wait_started, trx.trx_rows_locked, trx.trx_query "
        "FROM information_schema.innodb_trx AS trx "
        "JOIN information_schema.processlist AS session ON session.id = trx.trx_mysql_thread_id "
        "WHERE session.db = DATABASE()",
    ],
    "postgresql": [
        "SELECT pid, state, wait_event_type, wait_event, now() - query_start, query "
        "FROM pg_stat_activity WHERE datname = current_database()",
    ],
}


def _rows(using: str, queries: list[str]) -> list[str]:
    lines = []
    with connections[using].cursor() as cursor:
        for query in queries:
            try:
                cursor.execute(query)
                lines += [repr(row) for row in cursor.fetchall()]
            except DatabaseError as exc:
                lines.append(f"{query}: {exc}")
    return lines


def child_pids(parent: int) -> list[int]:
    """Pids whose parent is ``parent`` (from /proc; no database needed)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def started_for(database: str) -> list[int]:
    """Live processes (not this one) this run started for ``database``:
    their environment names it and this run (``SESSION_VARIABLE``), as
    every process a test here starts does."""
    marker = f"ROBUST_QUEUE_DB_NAME={database}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        pid = int(environ.parent.name)
        try:
            entries = environ.read_bytes().split(b"\0")
        except OSError:
            continue
        if pid != os.getpid() and marker in entries and SESSION_MARK in entries:
            found.append(pid)
    return [pid for pid in found if is_alive(pid)]


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (reaped by nobody yet) counts as dead.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_dead(pid: int, timeout: float = 15) -> None:
    wait_until(lambda: not is_alive(pid), timeout=timeout)


def elapsed_since(start: float) -> float:
    return time.monotonic() - start
