"""Forking children: the supervisor forks thread-free, so no child inherits
a connection of another thread (MySQL's client would end the parent's
session when the child drops it) and Python 3.12 has nothing to warn about.
"""

from __future__ import annotations

import os
import signal

from django.test import TransactionTestCase

from robust_queue.models import Job, Process
from testproject import tasks
from tests.helpers import wait_until

from .support import Supervisor

LIGHT_WORKERS = [{"queues": ["*"], "threads": 1, "processes": 20, "polling_interval": 1}]


class ForkTests(TransactionTestCase):
    def test_forking_20_children_leaves_the_supervisors_connection_alone(self) -> None:
        """No heartbeat or database error in the parent while it forks 20
        children (on MariaDB, an inherited socket used to be closed)."""
        supervisor = Supervisor(self, workers=LIGHT_WORKERS, dispatchers=[])
        first = supervisor.children("worker", count=20)
        self.wait_for_a_beat(supervisor.pid)
        # Replacements are forked while the supervisor's own connection is
        # open: 20 forks that could each hand it to a child.
        for worker in first:
            os.kill(worker.pid, signal.SIGKILL)
        old = {worker.pid for worker in first}
        wait_until(lambda: len(set(self.worker_pids(supervisor.pid)) - old) == 20, timeout=60)
        self.wait_for_a_beat(supervisor.pid)
        self.wait_for_a_beat(supervisor.pid)
        output = supervisor.output()
        # "(2013," is how MySQL reports the error; a bare 2013 can be a pid.
        for sign in ("Heartbeat", "Lost connection", "(2013,", "Traceback", "other threads"):
            self.assertNotIn(sign, output)

    def wait_for_a_beat(self, pid: int) -> None:
        [row] = Process.objects.filter(pid=pid, kind="supervisor")
        wait_until(
            lambda: Process.objects.get(pk=row.pk).last_heartbeat_at > row.last_heartbeat_at,
            timeout=30,
        )

    def worker_pids(self, supervisor_pid: int) -> list[int]:
        rows = Process.objects.filter(kind="worker", supervisor__pid=supervisor_pid)
        return list(rows.values_list("pid", flat=True))

    def test_no_fork_warning_with_deprecation_warnings_as_errors(self) -> None:
        """``-W error::DeprecationWarning``: the supervisor forks and works
        (Python 3.12 warns when a multi-threaded process forks)."""
        # Python 3.12.1 swallows the warning under "error": "always" prints it.
        for flag in ("error::DeprecationWarning", "always::DeprecationWarning"):
            result = tasks.add.enqueue(2, 3)
            supervisor = Supervisor(self, python_args=("-W", flag))
            supervisor.children("worker")
            wait_until(
                lambda result=result: Job.objects.filter(
                    result_id=result.id, finished_at__isnull=False
                ).exists(),
                timeout=30,
            )
            self.assertNotIn("multi-threaded", supervisor.output())
            self.assertNotIn("Traceback", supervisor.output())
            supervisor.kill()
