"""The supervisor ends a child that stopped answering and replaces it at
once (children are stand-ins; tests/processes/test_stuck_child.py runs real
ones), and a thread child that cannot be killed is left behind."""

from __future__ import annotations

import time
from datetime import timedelta
from unittest import mock

from django.test import SimpleTestCase
from django.utils import timezone

from robust_queue.models import Job, Process
from robust_queue.processes.base import Runnable
from robust_queue.processes.children import Role, ThreadChild
from testproject import tasks
from tests.helpers import claim

from .test_supervisor_loop import FakeChild, LoopSupervisor, SupervisorLoopTestCase, config

PRUNED = "robust_queue.exceptions.ProcessPrunedError"


class StuckFake(FakeChild):
    """Killing it makes it exit at the next reap."""

    def end_unresponsive(self, why: str) -> None:
        self.unresponsive = why
        self.reason = "was killed by signal SIGKILL"


class StuckLoopSupervisor(LoopSupervisor):
    def _launch(self, role: Role, failures: int) -> None:
        self.children.append(StuckFake(role, failures, self._pk()))


class StuckChildTests(SupervisorLoopTestCase):
    def boot_stuck(self) -> tuple[StuckLoopSupervisor, StuckFake]:
        supervisor = StuckLoopSupervisor(config())
        self.addCleanup(supervisor.wakeup.close)
        supervisor._boot()
        assert supervisor.heartbeat is not None
        healthy = mock.patch.object(supervisor.heartbeat, "healthy_for", return_value=1e6)
        healthy.start()
        self.addCleanup(healthy.stop)
        worker = supervisor.children[0]
        assert isinstance(worker, StuckFake)
        return supervisor, worker

    def test_a_child_it_prunes_is_killed_and_replaced_at_once(self) -> None:
        """Its claim fails once, by the prune; the exit the reap records
        finds nothing more to fail; the replacement is due now, with no
        crash back-off."""
        supervisor, worker = self.boot_stuck()
        result = tasks.add.enqueue(1, 2)
        claim(process=worker.process)
        stale = timezone.now() - timedelta(hours=1)
        Process.objects.filter(pk=worker.process.pk).update(last_heartbeat_at=stale)
        supervisor._prune()
        self.assertIn("pruned", worker.unresponsive or "")
        supervisor._reap()
        self.assertNotIn(worker, supervisor.children)
        self.assertTrue(supervisor.backlog.flush())
        [(due, role, failures)] = supervisor.pending
        self.assertLessEqual(due, time.monotonic())
        self.assertEqual((role.kind, failures), ("worker", 0))
        errors = Job.objects.get(result_id=result.id).errors
        self.assertEqual([e["exception_class_path"] for e in errors], [PRUNED])

    def test_a_child_whose_row_is_gone_is_killed_after_the_settle_time(self) -> None:
        """Pruned elsewhere or deleted: it gets the time a live child needs
        to stop itself, then it is killed."""
        supervisor, worker = self.boot_stuck()
        Process.objects.filter(pk=worker.process.pk).delete()
        supervisor._prune()
        self.assertIsNone(worker.unresponsive)
        supervisor.stuck.settle = 0
        supervisor._prune()
        self.assertIn("its process row was removed", worker.unresponsive or "")

    def test_a_child_that_heartbeats_is_left_alone(self) -> None:
        supervisor, worker = self.boot_stuck()
        supervisor.stuck.settle = 0
        supervisor._prune()
        self.assertEqual([c.unresponsive for c in supervisor.children], [None] * 3)

    def test_the_supervisor_records_its_children_for_health(self) -> None:
        supervisor, _ = self.boot_stuck()
        assert supervisor.process is not None
        metadata = Process.objects.get(pk=supervisor.process.pk).metadata
        self.assertEqual(metadata["children"], {"worker": 2, "dispatcher": 1})
        self.assertEqual(metadata["heartbeat_interval"], supervisor.config.heartbeat_interval)


class _Wedged(Runnable):
    def __init__(self) -> None:
        super().__init__(using="default", heartbeat_interval=60)
        self.stops: list[bool] = []

    def stop(self, *, immediately: bool = False) -> None:
        self.stops.append(immediately)


class StuckThreadTests(SimpleTestCase):
    def test_a_stuck_thread_is_asked_to_stop_and_left_behind(self) -> None:
        """A thread cannot be killed: the log says so; it is reaped at once
        (left running) and replaced without back-off."""
        runnable = _Wedged()
        self.addCleanup(runnable.wakeup.close)
        child = ThreadChild(Role("worker", Runnable), 3, runnable)
        with self.assertLogs("robust_queue.processes.children", "ERROR") as logs:
            child.end_unresponsive("no heartbeat")
        self.assertIn("A thread cannot be killed", logs.output[0])
        self.assertEqual(runnable.stops, [True])
        self.assertEqual(child.exit_reason(), "was left behind")
        self.assertEqual(child.replacement_delay(), (0.0, 3))
