"""A queue process's life in this process: boot, rounds, shutdown, and the
dispatcher's rounds, on the real test database (tests/processes runs them
as real processes)."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from django.db import OperationalError
from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue import signals
from robust_queue.models import (
    BlockedExecution,
    Job,
    Process,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
)
from robust_queue.processes import base
from robust_queue.processes.base import Runnable
from robust_queue.processes.config import DispatcherConfig
from robust_queue.processes.dispatcher import ConcurrencyMaintenance, Dispatcher
from testproject import control_tasks as ct
from testproject import tasks


class Rounds(Runnable):
    """Runs the rounds it is given, then stops itself."""

    kind = "worker"
    heartbeat_in_thread = False

    def __init__(self, rounds: list[Any], **kwargs: Any) -> None:
        super().__init__(using="default", heartbeat_interval=60, **kwargs)
        self.rounds = rounds
        self.events: list[str] = []
        self.rows_seen: list[bool] = []

    def boot(self) -> None:
        self.events.append("boot")

    def run_once(self) -> float:
        assert self.process is not None
        self.rows_seen.append(Process.objects.filter(pk=self.process.pk).exists())
        step = self.rounds.pop(0)
        if not self.rounds:
            self.stop()
        if isinstance(step, BaseException):
            raise step
        self.events.append("round")
        return float(step)

    def shutdown(self) -> None:
        self.events.append("shutdown")


class RunnableTests(TransactionTestCase):
    def run_rounds(self, rounds: list[Any], **kwargs: Any) -> Rounds:
        runnable = Rounds(rounds, **kwargs)
        self.addCleanup(runnable.wakeup.close)
        runnable.start()
        return runnable

    def test_boot_rounds_and_shutdown_in_order_registered_throughout(self) -> None:
        started, stopped = [], []
        signals.process_started.connect(
            lambda **kw: started.append(kw["process"].pk), weak=False, dispatch_uid="test-started"
        )
        signals.process_stopped.connect(
            lambda **kw: stopped.append(kw["process"].pk), weak=False, dispatch_uid="test-stopped"
        )
        self.addCleanup(signals.process_started.disconnect, dispatch_uid="test-started")
        self.addCleanup(signals.process_stopped.disconnect, dispatch_uid="test-stopped")
        runnable = self.run_rounds([0, 0, 0])
        self.assertEqual(runnable.events, ["boot", "round", "round", "round", "shutdown"])
        self.assertEqual(runnable.rows_seen, [True, True, True])
        assert runnable.process is not None
        self.assertFalse(Process.objects.filter(pk=runnable.process.pk).exists())
        self.assertEqual((started, stopped), ([runnable.process.pk], [runnable.process.pk]))

    def test_a_database_error_in_a_round_pauses_and_goes_on(self) -> None:
        lost = OperationalError("server closed the connection unexpectedly")
        with self.assertLogs("robust_queue.processes.outage", "WARNING") as logs:
            runnable = self.run_rounds([lost, 0])
        self.assertEqual(runnable.events, ["boot", "round", "shutdown"])
        self.assertIn("Work of", logs.output[0])
        self.assertIn("server closed the connection", logs.output[0])
        assert runnable.heartbeat is not None
        self.assertEqual(runnable.heartbeat.outages, 1)

    def test_any_other_error_in_a_round_is_logged_and_the_loop_goes_on(self) -> None:
        """A bug or a row the code cannot read does not end the process."""
        with self.assertLogs(base.logger, "ERROR") as logs:
            runnable = self.run_rounds([ValueError("bug"), 0])
        self.assertEqual(runnable.events, ["boot", "round", "shutdown"])
        [line] = logs.output
        self.assertIn("a round failed; going on", line)
        self.assertIn("ValueError: bug", line)

    def test_a_repeated_error_is_logged_once_and_its_pause_doubles(self) -> None:
        """The traceback is logged when the error first appears, not for
        every round it repeats in; a round that works ends the streak, and
        a different error is logged again."""
        runnable = Rounds([ValueError("bug"), ValueError("bug"), ValueError("bug"), 0])
        runnable.rounds += [ValueError("bug"), TypeError("other"), 0]
        self.addCleanup(runnable.wakeup.close)
        runnable._boot()
        self.addCleanup(runnable._shutdown)
        with self.assertLogs(base.logger, "ERROR") as logs:
            pauses = [runnable._run_once_safely() for _ in range(7)]
        self.assertEqual(pauses, [1.0, 2.0, 4.0, 0.0, 1.0, 1.0, 0.0])
        self.assertEqual(
            [line.splitlines()[-1] for line in logs.output],
            ["ValueError: bug", "ValueError: bug", "TypeError: other"],
        )
        assert runnable.process is not None
        self.assertTrue(Process.objects.filter(pk=runnable.process.pk).exists())

    def test_a_process_whose_parent_is_gone_stops(self) -> None:
        with self.assertLogs(base.logger, "WARNING") as logs:
            runnable = self.run_rounds([0, 0, 0], parent_pid=os.getppid() + 100000)
        self.assertEqual(runnable.events, ["boot", "shutdown"])
        self.assertIn("lost its supervisor; stopping", logs.output[0])

    def test_told_to_stop_while_waiting_to_register_it_exits_cleanly(self) -> None:
        """A child stopped by its supervisor before the database let it
        register ends without an error (it used to raise, a "crash"),
        having booted nothing and registered nothing."""
        runnable = Rounds([0])
        self.addCleanup(runnable.wakeup.close)

        def unreachable() -> Process:
            runnable.stop()  # the supervisor's TERM, while the database is away
            raise OperationalError("could not connect to server")

        runnable.registration.start = unreachable  # type: ignore[method-assign]
        with self.assertLogs(base.logger, "INFO") as logs:
            runnable.start()
        self.assertEqual(runnable.events, [])
        self.assertIsNone(runnable.process)
        self.assertFalse(Process.objects.exists())
        self.assertIn("stops before it could register: could not connect", "\n".join(logs.output))

    def test_losing_the_registration_stops_the_process(self) -> None:
        runnable = Rounds([0, 0, 0])
        self.addCleanup(runnable.wakeup.close)
        runnable.lost_registration()
        self.assertIs(runnable.stopping, True)


class DispatcherRoundTests(TransactionTestCase):
    def dispatcher(self, **config: Any) -> Dispatcher:
        dispatcher = Dispatcher(DispatcherConfig(**config), using="default", heartbeat_interval=60)
        self.addCleanup(dispatcher.wakeup.close)
        return dispatcher

    def due(self, count: int) -> None:
        for n in range(count):
            tasks.add.using(run_after=timezone.now() + timedelta(seconds=30)).enqueue(n, n)
        ScheduledExecution.objects.update(scheduled_at=timezone.now() - timedelta(seconds=1))

    def test_a_full_batch_goes_again_at_once(self) -> None:
        self.due(3)
        dispatcher = self.dispatcher(batch_size=2, polling_interval=0.7)
        self.assertEqual(dispatcher.run_once(), 0)
        self.assertEqual(ReadyExecution.objects.count(), 2)
        self.assertEqual(dispatcher.run_once(), 0.7)
        self.assertEqual(ReadyExecution.objects.count(), 3)
        self.assertFalse(ScheduledExecution.objects.exists())

    def test_jobs_not_due_stay_scheduled(self) -> None:
        tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
        self.assertEqual(self.dispatcher(polling_interval=0.7).run_once(), 0.7)
        self.assertEqual(ScheduledExecution.objects.count(), 1)

    def test_its_row_says_how_it_dispatches(self) -> None:
        dispatcher = self.dispatcher(batch_size=50, polling_interval=0.5)
        self.assertEqual(dispatcher.metadata, {"batch_size": 50, "polling_interval": 0.5})


class ConcurrencyMaintenanceTests(TransactionTestCase):
    def test_an_expired_slot_lets_a_blocked_job_run(self) -> None:
        """A holder that never gave its slot back (its worker was lost)."""
        ct.limited.enqueue("acme", "first")
        ct.limited.enqueue("acme", "second")
        blocked = ct.limited.enqueue("acme", "third")
        Semaphore.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
        self.assertEqual(ConcurrencyMaintenance("default", 600).run(), 1)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=blocked.id).exists())

    def test_it_runs_once_per_interval(self) -> None:
        maintenance = ConcurrencyMaintenance("default", 600)
        self.assertEqual(maintenance.run_if_due(), 0)
        self.assertIsNone(maintenance.run_if_due())
        maintenance._ran_at -= 600
        self.assertEqual(maintenance.run_if_due(), 0)

    def test_nothing_is_released_while_slots_are_held(self) -> None:
        ct.limited.enqueue("acme", "first")
        ct.limited.enqueue("acme", "second")
        ct.limited.enqueue("acme", "third")
        self.assertEqual(ConcurrencyMaintenance("default", 600).run(), 0)
        self.assertEqual(BlockedExecution.objects.count(), 1)
        self.assertEqual(Job.objects.count(), 3)
