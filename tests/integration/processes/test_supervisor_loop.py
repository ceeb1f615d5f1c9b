"""The supervisor's loop in this process: reaping, replacing, stopping,
pruning and maintenance, with children that are plain objects the test
moves. The database is the real test database; only the children are
stand-ins (tests/processes starts real ones)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from itertools import count
from typing import Any
from unittest import mock

from django.test import TestCase
from django.utils import timezone

from robust_queue.models import ClaimedExecution, FailedExecution, Job, Process, ProcessKind
from robust_queue.models.retention import Retention
from robust_queue.processes import maintenance
from robust_queue.processes import supervisor as supervisor_module
from robust_queue.processes.children import Child, Role
from robust_queue.processes.config import (
    DispatcherConfig,
    SchedulerConfig,
    SupervisorConfig,
    WorkerConfig,
)
from robust_queue.processes.supervisor import KILLED, Supervisor
from testproject import (
    control_tasks,  # noqa: F401 - declares recurring ticks
    tasks,
)
from tests.helpers import claim, work_off

_NUMBERS = count(1)


class FakeChild(Child):
    """A child whose exit the test decides; it registers a real row."""

    def __init__(self, role: Role, failures: int, supervisor_pk: int) -> None:
        super().__init__(role, failures)
        number = next(_NUMBERS)
        self.process = Process.objects.register(
            kind=role.kind,
            name=f"fake-{role.kind}-{number}",
            pid=100000 + number,
            hostname="test",
            supervisor_id=supervisor_pk,
        )
        self.reason: str | None = None
        self.stops_when_asked = True
        self.stop_calls: list[bool] = []
        self.killed = False

    def __str__(self) -> str:
        return f"fake {self.role.kind} {self.process.pk}"

    def die(self, reason: str = "exited with code 1", *, clean: bool = False) -> None:
        self.reason = reason
        self.clean_exit = clean

    def stop(self, *, immediately: bool = False) -> None:
        self.stop_calls.append(immediately)
        if self.stops_when_asked:
            self.reason = "stopped"

    def exit_reason(self) -> str | None:
        return self.reason

    def kill(self) -> None:
        self.killed = True

    def process_pk(self) -> int | None:
        return self.process.pk

    def rows(self, supervisor: Process, *, pid_reused: bool = False):  # type: ignore[no-untyped-def]
        return Process.objects.using(supervisor._state.db).filter(pk=self.process.pk)


class LoopSupervisor(Supervisor):
    """The real supervisor, launching ``FakeChild`` objects."""

    def _launch(self, role: Role, failures: int) -> None:
        self.children.append(FakeChild(role, failures, self._pk()))


def config(**changes: object) -> SupervisorConfig:
    base = SupervisorConfig(
        workers=(WorkerConfig(processes=2),),
        dispatchers=(DispatcherConfig(),),
        scheduler=None,
        shutdown_timeout=0.2,
        database="default",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


class SupervisorLoopTestCase(TestCase):
    def boot(self, **changes: object) -> LoopSupervisor:
        supervisor = LoopSupervisor(config(**changes))
        self.addCleanup(supervisor.wakeup.close)
        supervisor._boot()
        return supervisor

    def fakes(self, supervisor: Supervisor) -> list[FakeChild]:
        return [child for child in supervisor.children if isinstance(child, FakeChild)]


class BootTests(SupervisorLoopTestCase):
    def test_one_child_per_process_of_each_role(self) -> None:
        supervisor = self.boot()
        self.assertEqual(
            [c.role.kind for c in supervisor.children], ["worker", "worker", "dispatcher"]
        )
        rows = Process.objects.filter(supervisor_id=supervisor.process.pk)  # type: ignore[union-attr]
        self.assertEqual(rows.count(), 3)

    def test_a_scheduler_only_when_configured(self) -> None:
        """The test project declares recurring tasks: a scheduler role is
        there when configured, and absent when not."""
        kinds = [c.role.kind for c in self.boot(scheduler=SchedulerConfig()).children]
        self.assertEqual(kinds.count("scheduler"), 1)
        self.assertNotIn("scheduler", [c.role.kind for c in self.boot().children])

    def test_boot_fails_the_claims_of_processes_that_are_gone(self) -> None:
        result = tasks.add.enqueue(1, 2)
        gone = Process.objects.register(kind=ProcessKind.WORKER, name="gone", pid=1)
        claim(process=gone)
        Process.objects.filter(pk=gone.pk).delete()
        self.boot()
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(
            job.errors[-1]["exception_class_path"], "robust_queue.exceptions.ProcessMissingError"
        )


class ReplacementTests(SupervisorLoopTestCase):
    def test_a_crashed_child_is_replaced_after_its_back_off(self) -> None:
        supervisor = self.boot()
        crashed = self.fakes(supervisor)[0]
        crashed.die()
        supervisor._tick()
        self.assertNotIn(crashed, supervisor.children)
        self.assertEqual(len(supervisor.children), 2)
        [(due, role, failures)] = supervisor.pending
        self.assertEqual((role, failures), (crashed.role, 1))
        self.assertGreater(due, time.monotonic())
        self.assertLessEqual(due - time.monotonic(), 1.0)
        supervisor._tick()
        self.assertEqual(len(supervisor.children), 2, "not before its back-off")
        supervisor.pending[0] = (time.monotonic(), role, failures)
        supervisor._tick()
        replacement = supervisor.children[-1]
        self.assertEqual((replacement.role, replacement.failures), (crashed.role, 1))
        self.assertEqual(supervisor.pending, [])

    def test_a_clean_exit_is_replaced_in_the_same_tick(self) -> None:
        """A recycled worker exits 0: a fresh one at once, no failure."""
        supervisor = self.boot()
        recycled = self.fakes(supervisor)[0]
        recycled.die("stopped (max_jobs reached)", clean=True)
        with self.assertLogs(supervisor_module.logger, "INFO") as logs:
            supervisor._tick()
        self.assertEqual(len(supervisor.children), 3)
        self.assertEqual(supervisor.children[-1].failures, 0)
        self.assertIn("starting a fresh one now", "\n".join(logs.output))

    def test_the_claims_of_a_dead_child_fail_and_its_row_goes(self) -> None:
        supervisor = self.boot()
        dead = self.fakes(supervisor)[0]
        result = tasks.add.enqueue(1, 2)
        claim(process=dead.process)
        dead.die("was killed by signal SIGKILL")
        supervisor._tick()
        job = Job.objects.get(result_id=result.id)
        self.assertTrue(FailedExecution.objects.filter(job=job).exists())
        self.assertIn("was killed by signal SIGKILL", job.errors[-1]["traceback"])
        self.assertFalse(Process.objects.filter(pk=dead.process.pk).exists())

    def test_a_child_that_dies_while_stopping_is_not_replaced(self) -> None:
        supervisor = self.boot()
        supervisor.stopping = True
        self.fakes(supervisor)[0].die()
        supervisor._tick()
        self.assertEqual(len(supervisor.children), 2)
        self.assertEqual(supervisor.pending, [])

    def test_a_pending_replacement_is_dropped_once_stopping(self) -> None:
        supervisor = self.boot()
        self.fakes(supervisor)[0].die()
        supervisor._tick()
        supervisor.stopping = True
        supervisor.pending[0] = (time.monotonic(), *supervisor.pending[0][1:])
        supervisor._tick()
        self.assertEqual((len(supervisor.children), supervisor.pending), (2, []))


class SignalTests(SupervisorLoopTestCase):
    def test_term_stops_every_child_gracefully(self) -> None:
        supervisor = self.boot()
        for child in self.fakes(supervisor):
            child.stops_when_asked = False
        supervisor.signals.pending.append(signal.SIGTERM)
        supervisor._tick()
        self.assertIs(supervisor.stopping, True)
        self.assertIs(supervisor.immediately, False)
        self.assertEqual([c.stop_calls for c in self.fakes(supervisor)], [[False]] * 3)

    def test_quit_stops_every_child_at_once(self) -> None:
        supervisor = self.boot()
        for child in self.fakes(supervisor):
            child.stops_when_asked = False
        supervisor.signals.pending.append(signal.SIGQUIT)
        supervisor._tick()
        self.assertIs(supervisor.immediately, True)
        self.assertEqual([c.stop_calls for c in self.fakes(supervisor)], [[True]] * 3)

    def test_a_second_term_while_stopping_stops_at_once(self) -> None:
        supervisor = self.boot()
        for child in self.fakes(supervisor):
            child.stops_when_asked = False
        supervisor.signals.pending.append(signal.SIGTERM)
        supervisor._tick()
        supervisor.signals.pending.append(signal.SIGTERM)
        supervisor._tick()
        self.assertIs(supervisor.immediately, True)
        self.assertEqual([c.stop_calls for c in self.fakes(supervisor)], [[False, True]] * 3)


class ShutdownTests(SupervisorLoopTestCase):
    def test_children_that_stop_are_reaped_and_none_is_killed(self) -> None:
        supervisor = self.boot()
        children = self.fakes(supervisor)
        supervisor._stop_children()
        self.assertEqual(supervisor.children, [])
        self.assertFalse(any(child.killed for child in children))
        self.assertFalse(Process.objects.filter(kind__in=["worker", "dispatcher"]).exists())

    def test_a_child_that_does_not_stop_in_time_is_killed_and_its_claims_fail(self) -> None:
        supervisor = self.boot()
        stubborn, *others = self.fakes(supervisor)
        stubborn.stops_when_asked = False
        result = tasks.add.enqueue(1, 2)
        claim(process=stubborn.process)
        with mock.patch.object(supervisor_module, "KILL_GRACE", 0.0):
            supervisor._stop_children()
        self.assertEqual(supervisor.children, [])
        self.assertIs(stubborn.killed, True)
        self.assertEqual([c.killed for c in others], [False, False])
        job = Job.objects.get(result_id=result.id)
        self.assertIn(KILLED, job.errors[-1]["traceback"])
        self.assertFalse(Process.objects.filter(pk=stubborn.process.pk).exists())


class MaintenanceTests(SupervisorLoopTestCase):
    def stale_worker(self) -> Process:
        other = Process.objects.register(kind=ProcessKind.WORKER, name="elsewhere", pid=7)
        Process.objects.filter(pk=other.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        return other

    def test_no_pruning_before_a_whole_alive_threshold_of_good_health(self) -> None:
        """After an outage everyone's heartbeat is stale: wait until every
        live process has had the time to beat again."""
        supervisor = self.boot()
        other = self.stale_worker()
        supervisor._pruned_at -= supervisor.config.heartbeat_interval
        supervisor._tick()
        self.assertTrue(Process.objects.filter(pk=other.pk).exists())
        assert supervisor.heartbeat is not None
        supervisor.heartbeat.report._healthy_since = (
            time.monotonic() - supervisor.config.alive_threshold
        )
        supervisor._pruned_at -= supervisor.config.heartbeat_interval
        supervisor._tick()
        self.assertFalse(Process.objects.filter(pk=other.pk).exists())

    def test_pruning_runs_once_per_heartbeat_interval(self) -> None:
        supervisor = self.boot()
        assert supervisor.heartbeat is not None
        supervisor.heartbeat.report._healthy_since = (
            time.monotonic() - supervisor.config.alive_threshold
        )
        other = self.stale_worker()
        supervisor._tick()
        self.assertTrue(Process.objects.filter(pk=other.pk).exists(), "not due yet")

    def test_the_supervisor_never_prunes_itself(self) -> None:
        supervisor = self.boot()
        assert supervisor.heartbeat is not None and supervisor.process is not None
        supervisor.heartbeat.report._healthy_since = (
            time.monotonic() - supervisor.config.alive_threshold
        )
        Process.objects.filter(pk=supervisor.process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        supervisor._pruned_at -= supervisor.config.heartbeat_interval
        supervisor._prune()
        self.assertTrue(Process.objects.filter(pk=supervisor.process.pk).exists())

    def test_old_jobs_are_cleared_every_maintenance_interval(self) -> None:
        supervisor = self.boot()
        tasks.add.enqueue(1, 2)
        work_off()
        Job.objects.update(finished_at=timezone.now() - timedelta(days=2))
        supervisor._tick()
        self.assertEqual(Job.objects.count(), 1, "not due yet")
        supervisor.housekeeping.started_at -= supervisor.config.maintenance_interval
        supervisor._tick()
        self.assertEqual(Job.objects.count(), 0)

    def test_a_signal_ends_a_retention_slice_after_its_batch(self) -> None:
        """TERM waits for no more than the batch under way: the slice
        ends, and the next tick stops the supervisor."""
        supervisor = self.boot()
        batches: list[int] = []

        def endless() -> Iterator[int]:
            while True:
                batches.append(1)
                if len(batches) == 2:
                    supervisor.signals.pending.append(signal.SIGTERM)
                yield 1

        supervisor.housekeeping.start = endless
        supervisor.housekeeping.budget = 60
        supervisor.housekeeping.started_at -= supervisor.config.maintenance_interval
        self.assertEqual(supervisor.run_once(), supervisor_module.BUSY_TICK)
        self.assertEqual(len(batches), 2)
        supervisor._tick()
        self.assertIs(supervisor.stopping, True)
        self.assertEqual(len(batches), 2)

    def test_a_long_pass_resumes_on_the_next_tick(self) -> None:
        """Each tick clears one budget's worth (here one batch of two old
        jobs); the loop comes back at once while the pass is unfinished."""
        for value in range(5):
            tasks.add.enqueue(value, 1)
        work_off()
        Job.objects.update(finished_at=timezone.now() - timedelta(days=2))
        supervisor = self.boot()
        # Spent by any step: one batch per tick.
        supervisor.housekeeping.budget = 0
        supervisor.housekeeping.started_at -= supervisor.config.maintenance_interval
        small = Retention(finished_older_than=timedelta(days=1), batch_size=2)
        with mock.patch.object(Retention, "from_settings", return_value=small):
            self.assertEqual(supervisor.run_once(), supervisor_module.BUSY_TICK)
            self.assertEqual(Job.objects.count(), 3)
            supervisor.run_once()
            self.assertEqual(Job.objects.count(), 1)
            while supervisor.run_once() == supervisor_module.BUSY_TICK:
                pass
        self.assertEqual(Job.objects.count(), 0)
        self.assertEqual(supervisor.run_once(), supervisor_module.TICK)

    def test_nothing_is_maintained_while_stopping(self) -> None:
        supervisor = self.boot()
        tasks.add.enqueue(1, 2)
        work_off()
        Job.objects.update(finished_at=timezone.now() - timedelta(days=2))
        supervisor.stopping = True
        supervisor.housekeeping.started_at -= supervisor.config.maintenance_interval
        supervisor._tick()
        self.assertEqual(Job.objects.count(), 1)


class LostRegistrationTests(SupervisorLoopTestCase):
    def test_a_pruned_supervisor_registers_again_and_adopts_its_children(self) -> None:
        supervisor = self.boot()
        assert supervisor.process is not None
        old_pk = supervisor.process.pk
        Process.objects.filter(pk=old_pk).delete()
        children = [child.process.pk for child in self.fakes(supervisor)]
        self.assertEqual(
            list(Process.objects.filter(pk__in=children).values_list("supervisor_id", flat=True)),
            [None] * 3,
        )
        supervisor.lost_registration()
        self.assertNotEqual(supervisor.process.pk, old_pk)
        supervised = Process.objects.filter(pk__in=children, supervisor_id=supervisor.process.pk)
        self.assertEqual(supervised.count(), 3)


def unfailable_claim(test: TestCase, process: Process) -> tuple[str, int, Callable[[], object]]:
    """A job claimed by ``process`` whose claim the code cannot fail: for
    this job, ``ClaimedExecution.fail`` raises a ``RuntimeError`` (a bug,
    not the database's error) until the returned ``repair`` is called.
    Its result id, claim pk, and ``repair``."""
    result = tasks.add.enqueue(1, 2)
    [claimed] = claim(1, process=process)
    job_id = claimed.job_id
    real_fail = ClaimedExecution.fail

    def fail(self: ClaimedExecution, *args: Any, **kwargs: Any) -> bool:
        if self.job_id == job_id:
            raise RuntimeError(f"test fault: the claim of job {job_id} cannot be failed")
        return real_fail(self, *args, **kwargs)

    patch = mock.patch.object(ClaimedExecution, "fail", fail)
    patch.start()
    test.addCleanup(patch.stop)
    return result.id, claimed.pk, patch.stop


def failed_with(result_id: str) -> str:
    return str(Job.objects.get(result_id=result_id).errors[-1]["exception_class_path"])


class BadRowTests(SupervisorLoopTestCase):
    """One row the code cannot handle never stops the supervisor, nor the
    upkeep of the other rows; it is logged once, with the row it concerns."""

    def stale(self, process: Process) -> None:
        Process.objects.filter(pk=process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )

    def test_boot_goes_on_past_an_orphaned_claim_it_cannot_fail(self) -> None:
        gone = Process.objects.register(kind=ProcessKind.WORKER, name="gone", pid=1)
        _, bad_claim, _ = unfailable_claim(self, gone)
        good = tasks.add.enqueue(3, 4)
        claim(1, process=gone)
        Process.objects.filter(pk=gone.pk).delete()
        with self.assertLogs(maintenance.logger, "ERROR") as logs:
            supervisor = self.boot()
        self.assertEqual(len(supervisor.children), 3)
        self.assertEqual(failed_with(good.id), "robust_queue.exceptions.ProcessMissingError")
        self.assertTrue(ClaimedExecution.objects.filter(pk=bad_claim).exists())
        [line] = logs.output
        self.assertIn(f"Failing claim {bad_claim} of job", line)
        self.assertIn("RuntimeError: test fault", line)

    def test_a_dead_child_whose_claim_cannot_be_failed_is_still_replaced(self) -> None:
        """The exit record is logged and dropped (no retry every tick); the
        child's row stays for pruning, which fails the other claims."""
        supervisor = self.boot()
        dead = self.fakes(supervisor)[0]
        unfailable_claim(self, dead.process)
        dead.die("was killed by signal SIGKILL")
        with self.assertLogs(maintenance.logger, "ERROR") as logs:
            supervisor._tick()
        [line] = logs.output
        self.assertIn(f"Recording the exit of {dead} failed; dropped", line)
        self.assertEqual(len(supervisor.backlog), 0)
        [(_, role, failures)] = supervisor.pending
        self.assertEqual((role, failures), (dead.role, 1))
        supervisor.pending[0] = (time.monotonic(), role, failures)
        with self.assertNoLogs(maintenance.logger, "ERROR"):
            supervisor._tick()
        self.assertEqual(len(supervisor.children), 3)
        self.assertTrue(Process.objects.filter(pk=dead.process.pk).exists())

    def test_pruning_goes_on_past_a_process_it_cannot_prune(self) -> None:
        """Each stale process is pruned on its own; the claim that could not
        be failed is an orphan, logged once by the sweep however often it
        runs, and failed once the fault is gone."""
        supervisor = self.boot()
        assert supervisor.heartbeat is not None
        supervisor.heartbeat.report._healthy_since = (
            time.monotonic() - supervisor.config.alive_threshold
        )
        supervisor.orphans.settle = 0
        broken = Process.objects.register(kind=ProcessKind.WORKER, name="broken", pid=7)
        bad_id, bad_claim, repair = unfailable_claim(self, broken)
        fine = Process.objects.register(kind=ProcessKind.WORKER, name="fine", pid=8)
        good = tasks.add.enqueue(3, 4)
        claim(1, process=fine)
        self.stale(broken)
        self.stale(fine)
        with self.assertLogs(maintenance.logger, "ERROR") as logs:
            supervisor._prune()
            supervisor._prune()
            supervisor._prune()
        self.assertFalse(Process.objects.filter(pk__in=[broken.pk, fine.pk]).exists())
        self.assertEqual(failed_with(good.id), "robust_queue.exceptions.ProcessPrunedError")
        self.assertTrue(ClaimedExecution.objects.filter(pk=bad_claim).exists())
        self.assertEqual(len(logs.output), 2, logs.output)
        self.assertIn(f"Pruning worker broken (row {broken.pk}, pid 7", logs.output[0])
        self.assertIn(f"Failing claim {bad_claim} of job", logs.output[1])
        repair()
        supervisor._prune()
        self.assertEqual(failed_with(bad_id), "robust_queue.exceptions.ProcessMissingError")
