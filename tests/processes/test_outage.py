"""Database outages: the test restarts a private server of its own.

A restart longer than the alive threshold prunes no live process, and a
child that dies while the database is down is replaced at once; its jobs
are failed when the database is back.
"""

from __future__ import annotations

import os
import re
import signal
import time
from typing import Any, ClassVar
from unittest import skipIf

from django.db import connection, connections
from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, Job, Process
from testproject import tasks
from tests.helpers import wait_until

from .servers import PrivateServer, forget_alias, private_server, serve_queue_from
from .support import Supervisor, wait_dead

PRIVATE = "private_server"
# Outage tests: beats every 0.5 s, pruned after 3 s of silence.
QUICK = {
    "workers": [{"queues": ["*"], "threads": 2, "processes": 2, "polling_interval": 0.1}],
    "dispatchers": [],
    "process_heartbeat_interval": 0.5,
    "process_alive_threshold": 3,
    "shutdown_timeout": 3,
}


@skipIf(connection.vendor == "sqlite", "SQLite has no server to restart")
class OutageTests(TransactionTestCase):
    databases: ClassVar[set[str]] = {"default", PRIVATE}  # type: ignore[misc]
    server: ClassVar[PrivateServer]

    @classmethod
    def setUpClass(cls) -> None:
        vendor = "postgresql" if connection.vendor == "postgresql" else "mariadb"
        cls.server = private_server(vendor)
        cls.addClassCleanup(cls.server.destroy)
        serve_queue_from(cls, cls.server, PRIVATE)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        forget_alias(PRIVATE)

    def supervisor(self, **config: Any) -> Supervisor:
        return Supervisor(self, env=self.server.env(), using=PRIVATE, **{**QUICK, **config})

    def outage(self, seconds: float) -> None:
        connections[PRIVATE].close()
        self.server.stop()
        time.sleep(seconds)
        self.server.start()

    def jobs(self) -> Any:
        return Job.objects.using(PRIVATE)

    def errors(self, result_id: str) -> list[str]:
        job = self.jobs().get(result_id=result_id)
        return [error["exception_class_path"] for error in job.errors]

    def test_a_restart_longer_than_the_alive_threshold_prunes_no_live_process(self) -> None:
        """Jobs running across an 8 s outage (threshold 3 s) finish; no one is pruned."""
        results = [tasks.sleep_for.enqueue(15) for _ in range(4)]
        supervisor = self.supervisor()
        workers = supervisor.children("worker", count=2)
        claims = ClaimedExecution.objects.using(PRIVATE)
        wait_until(lambda: claims.count() == 4, timeout=30)
        self.outage(8)
        done = self.jobs().filter(finished_at__isnull=False)
        wait_until(lambda: done.count() == 4, timeout=60)
        for result in results:
            self.assertEqual(self.errors(result.id), [])
        alive = Process.objects.using(PRIVATE).filter(kind="worker")
        self.assertEqual({w.pk for w in alive}, {w.pk for w in workers})
        output = supervisor.output()
        self.assertNotIn("Pruned", output)
        self.assertNotIn("Traceback", output)
        self.assert_one_warning_per_process(output)

    def assert_one_warning_per_process(self, output: str) -> None:
        """Every thread that uses the database (main loop, heartbeat,
        watchdog's cancel poll, LISTEN, statistics flush) reports through
        its process: one warning per process (supervisor and two workers)
        and one line when the database is back, nothing else."""
        warnings = re.findall(r"^\S+ \S+ WARNING .*$", output, re.MULTILINE)
        outage = re.findall(
            r"WARNING +\S+ (.+?) of (\S+) failed: .*; retrying until the "
            r"database is back$",
            output,
            re.MULTILINE,
        )
        self.assertEqual(len(outage), len(warnings), output)
        names = [name for _, name in outage]
        self.assertLessEqual(len(names), 3, output)
        self.assertEqual(len(set(names)), len(names), output)
        back = re.findall(r"INFO +\S+ (\S+) reaches the database again", output)
        self.assertEqual(sorted(back), sorted(names), output)

    def test_a_child_killed_during_an_outage_is_replaced(self) -> None:
        """Reaping and replacing go on while the database is down; the
        dead child's job is failed once the database is back."""
        results = [tasks.sleep_for.enqueue(30) for _ in range(2)]
        supervisor = self.supervisor(
            workers=[{"queues": ["*"], "threads": 1, "processes": 2, "polling_interval": 0.1}]
        )
        supervisor.children("worker", count=2)
        claims = ClaimedExecution.objects.using(PRIVATE).select_related("process", "job")
        wait_until(lambda: claims.all().count() == 2, timeout=30)
        victim = claims.all().first()
        assert victim is not None and victim.process is not None
        connections[PRIVATE].close()
        self.server.stop()
        forked = supervisor.output().count("Forked worker")
        os.kill(victim.process.pid, signal.SIGKILL)
        wait_dead(victim.process.pid)
        # Replaced while the database is still down.
        wait_until(lambda: supervisor.output().count("Forked worker") > forked, timeout=30)
        self.server.start()

        def replaced() -> bool:
            pids = set(
                Process.objects.using(PRIVATE).filter(kind="worker").values_list("pid", flat=True)
            )
            return len(pids) == 2 and victim.process.pid not in pids

        wait_until(replaced, timeout=60)
        wait_until(lambda: self.errors(victim.job.result_id), timeout=60)
        self.assertEqual(
            self.errors(victim.job.result_id), ["robust_queue.exceptions.ProcessExitError"]
        )
        others = [r.id for r in results if r.id != victim.job.result_id]
        self.assertEqual(self.errors(others[0]), [])
        self.assertNotIn("Traceback", supervisor.output())
