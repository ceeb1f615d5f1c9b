"""Running the real supervisor (`manage.py robust_queue`) in a subprocess."""

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
from django.test import TransactionTestCase

from robust_queue.models import Process
from tests.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]

FAST = {
    "workers": [{"queues": ["*"], "threads": 3, "polling_interval": 0.05}],
    "dispatchers": [{"batch_size": 100, "polling_interval": 0.1}],
    "process_heartbeat_interval": 0.5,
    "process_alive_threshold": 10,
    "shutdown_timeout": 3,
}


class Supervisor:
    """One `manage.py robust_queue` subprocess, killed at test cleanup."""

    def __init__(self, test: TransactionTestCase, *args: str, **config: Any) -> None:
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        env = dict(
            os.environ,
            ROBUST_QUEUE_DB_NAME=settings.DATABASES["default"]["NAME"],
            ROBUST_QUEUE_CONFIG_JSON=json.dumps({**FAST, **config}),
            ROBUST_QUEUE_DEBUG="0",
        )
        self.popen = subprocess.Popen(
            [sys.executable, "manage.py", "robust_queue", *args],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
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
                Process.objects.filter(kind=kind, supervisor__pid=self.pid).order_by("pk")
            )
            return rows if len(rows) >= count else []

        return wait_until(found, timeout=30)  # type: ignore[return-value]

    def kill(self) -> None:
        pids = [p.pid for p in Process.objects.filter(supervisor__pid=self.pid)]
        for pid in [self.pid, *pids]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if os.environ.get("RQ_KEEP_LOGS"):
            print(self.output())
        os.unlink(self.log.name)


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
