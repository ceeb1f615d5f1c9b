"""A forked child's exit is recorded on its own row: the child tells the
supervisor which row it registered through a pipe, so reaping needs
neither the database nor this host's clock (really forked, in this
process; tests/processes runs the whole supervisor)."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any
from unittest import mock

from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue.models import ClaimedExecution, Job, Process, ProcessKind
from robust_queue.processes.base import Runnable
from robust_queue.processes.children import ForkedChild, Role
from testproject import tasks
from tests.helpers import claim, wait_until


class CrashesAfterClaiming(Runnable):
    """Registers, claims one job, and dies without a word."""

    kind = "worker"
    heartbeat_in_thread = False

    def run_once(self) -> float:
        assert self.process is not None
        claim(1, process=self.process)
        os._exit(3)


def never_starts(**kwargs: Any) -> Runnable:
    raise RuntimeError("broken before registering")


class ForkedChildTests(TransactionTestCase):
    def setUp(self) -> None:
        self.supervisor = Process.objects.register(
            kind=ProcessKind.SUPERVISOR, name="s", pid=os.getpid(), hostname="h"
        )

    def fork(self, build: Any) -> ForkedChild:
        return ForkedChild.start(
            Role("worker", build),
            0,
            using="default",
            heartbeat_interval=60,
            supervisor_id=self.supervisor.pk,
        )

    def test_an_exit_reaches_only_its_own_row_when_the_pid_is_reused(self) -> None:
        """A new child that got the pid keeps its row and claim, even with
        this host's clock ten minutes ahead of the database's."""
        old_job = tasks.add.enqueue(1, 1)
        child = self.fork(CrashesAfterClaiming)
        real_now = timezone.now
        with mock.patch.object(timezone, "now", lambda: real_now() + timedelta(minutes=10)):
            reason = wait_until(child.exit_reason, timeout=30)
        self.assertEqual(reason, "exited with code 3")
        old = Process.objects.get(supervisor=self.supervisor, pid=child.pid)
        new = Process.objects.register(
            kind=ProcessKind.WORKER,
            name="new",
            pid=child.pid,
            hostname="h",
            supervisor=self.supervisor,
        )
        new_job = tasks.add.enqueue(2, 2)
        claim(1, process=new)
        self.assertEqual(child.fail_claims(self.supervisor, reason, pid_reused=True), 1)
        failed = Job.objects.get(result_id=old_job.id)
        self.assertEqual(
            failed.errors[-1]["exception_class_path"], "robust_queue.exceptions.ProcessExitError"
        )
        self.assertEqual(list(self.supervisor.supervisees.all()), [new])
        self.assertEqual(ClaimedExecution.objects.get().job.result_id, new_job.id)
        self.assertEqual(child.process_pk(), old.pk)

    def test_a_child_that_dies_before_registering_has_no_row(self) -> None:
        child = self.fork(never_starts)
        self.assertEqual(wait_until(child.exit_reason, timeout=30), "exited with code 1")
        self.assertIsNone(child.process_pk())
        self.assertFalse(child.rows(self.supervisor).exists())
        self.assertFalse(child.rows(self.supervisor, pid_reused=True).exists())
