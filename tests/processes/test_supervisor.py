"""The real supervisor: exactly-once draining, signals, crashes, pruning."""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import timedelta

from django.db.models import Count
from django.test import TransactionTestCase
from django.utils import timezone

import robust_queue
from robust_queue.compat import TaskResultStatus
from robust_queue.models import (
    ClaimedExecution,
    Job,
    Process,
    ProcessKind,
    ReadyExecution,
    Statistic,
)
from testproject import control_tasks, tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, wait_until

from .support import Supervisor, is_alive, wait_dead


def finished_count() -> int:
    return Job.objects.filter(finished_at__isnull=False).count()


def error_classes(result_id: str) -> list[str]:
    job = Job.objects.get(result_id=result_id)
    return [error["exception_class_path"] for error in job.errors]


class DrainTests(TransactionTestCase):
    def test_a_mixed_workload_finishes_exactly_once(self) -> None:
        """1,000 tasks over two worker processes: every one runs once."""
        later = timezone.now() + timedelta(seconds=1)
        calls = [(tasks.record, (f"job-{i}",), {}) for i in range(950)]
        calls += [(tasks.record.using(run_after=later), (f"later-{i}",), {}) for i in range(40)]
        calls += [(tasks.fail, ("expected",), {}) for _ in range(10)]
        robust_queue.enqueue_all(calls)
        supervisor = Supervisor(
            self,
            workers=[{"queues": ["*"], "threads": 3, "processes": 2, "polling_interval": 0.05}],
        )
        wait_until(lambda: finished_count() == 990, timeout=120)
        wait_until(lambda: Job.objects.failed().count() == 10, timeout=10)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0)
        self.assertEqual(LedgerEntry.objects.count(), 990)
        repeated = LedgerEntry.objects.values("key").annotate(n=Count("pk")).filter(n__gt=1)
        self.assertEqual(list(repeated), [])
        workers = {ids[0] for ids in Job.objects.values_list("worker_ids", flat=True)}
        # Both processes worked, and neither was replaced (a third name
        # would mean a worker died: the log says why).
        self.assertEqual(len(workers), 2, supervisor.output())
        self.assertFalse(Process.objects.exists())

    def test_a_forged_task_path_fails_clearly_and_the_worker_goes_on(self) -> None:
        forged = tasks.add.enqueue(1, 1)
        Job.objects.filter(result_id=forged.id).update(task_path="os.system")
        good = tasks.add.enqueue(2, 2)
        Supervisor(self)
        wait_until(lambda: finished_count() == 1, timeout=30)
        wait_until(lambda: Job.objects.failed().exists(), timeout=10)
        self.assertEqual(error_classes(forged.id), ["robust_queue.exceptions.UnknownTaskError"])
        self.assertEqual(tasks.add.get_result(good.id).return_value, 4)

    def test_two_supervisors_share_the_work(self) -> None:
        # Enqueued once both workers are up, as jobs that one worker's three
        # threads alone would take 5 s to run: on a loaded machine the first
        # drained all 150 short jobs before the second had started, and
        # then, with the queue held by a Pause, before the second worker's
        # cache of pauses (1 s) saw it lifted.
        first, second = Supervisor(self), Supervisor(self)
        wait_until(lambda: Process.objects.filter(kind=ProcessKind.WORKER).count() == 2, timeout=60)
        robust_queue.enqueue_all([(tasks.record, (f"k{i}", 0.1), {}) for i in range(150)])
        wait_until(lambda: finished_count() == 150, timeout=90)
        self.assertEqual(LedgerEntry.objects.values("key").distinct().count(), 150)
        self.assertEqual(LedgerEntry.objects.count(), 150)
        workers = {ids[0] for ids in Job.objects.values_list("worker_ids", flat=True)}
        self.assertEqual(len(workers), 2, "each supervisor's worker took jobs")
        for supervisor in (first, second):
            supervisor.send(signal.SIGTERM)
            self.assertEqual(supervisor.wait(timeout=15), 0)

    def test_thread_mode_runs_the_same_roles(self) -> None:
        result = tasks.add.using(run_after=timezone.now() + timedelta(milliseconds=300)).enqueue(
            3, 4
        )
        supervisor = Supervisor(self, "--mode", "thread")
        wait_until(lambda: finished_count() == 1, timeout=30)
        self.assertEqual(tasks.add.get_result(result.id).return_value, 7)
        kinds = set(Process.objects.values_list("kind", flat=True))
        self.assertEqual(kinds, {"supervisor", "worker", "dispatcher"})
        self.assertEqual(len(set(Process.objects.values_list("pid", flat=True))), 1)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0)

    def test_thread_mode_replacements_leak_no_descriptors(self) -> None:
        """A replaced thread child's wakeup pipe is closed (two fds each)."""
        supervisor = Supervisor(self, "--mode", "thread", dispatchers=[])

        def threads() -> int:
            return len(os.listdir(f"/proc/{supervisor.pid}/task"))

        def workers_started() -> int:
            return len(re.findall(r"worker-\S+ started \(pid", supervisor.output()))

        def replace_worker() -> int:
            """Replace the (booted) worker; the descriptors once the old
            one's threads have ended, closing their connections."""
            started = wait_until(workers_started, timeout=30)
            running = threads()
            Process.objects.filter(kind="worker").delete()
            wait_until(lambda: workers_started() > started, timeout=30)  # type: ignore[operator]
            wait_until(lambda: threads() <= running, timeout=30)
            return len(os.listdir(f"/proc/{supervisor.pid}/fd"))

        # Back-off doubles per replacement: three take 1 + 2 + 4 s.
        before = replace_worker()
        after = [replace_worker() for _ in range(2)]
        self.assertLess(max(after) - before, 2 * 2, (before, after))


class SignalTests(TransactionTestCase):
    def test_term_finishes_in_flight_work_and_exits_zero(self) -> None:
        robust_queue.enqueue_all([(tasks.record, (f"t{i}", 0.3), {}) for i in range(30)])
        supervisor = Supervisor(self)
        wait_until(lambda: finished_count() >= 3, timeout=30)
        supervisor.send(signal.SIGTERM)
        start = time.monotonic()
        self.assertEqual(supervisor.wait(timeout=15), 0)
        self.assertLess(time.monotonic() - start, 3 + 5)
        self.assertFalse(ClaimedExecution.objects.exists())
        done = finished_count()
        self.assertEqual(LedgerEntry.objects.count(), done, "no finished job re-ran")
        self.assertEqual(ReadyExecution.objects.count(), 30 - done, "no job lost")

    def test_term_past_the_timeout_releases_unfinished_jobs(self) -> None:
        result = tasks.sleep_for.enqueue(20)
        supervisor = Supervisor(self, shutdown_timeout=1)
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        supervisor.send(signal.SIGTERM)
        self.assertEqual(supervisor.wait(timeout=15), 0)
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.state, "ready")
        self.assertEqual(job.errors, [])
        # Counted: a run given back is no attempt's outcome, but it shows.
        total = Statistic.objects.totals().get(task_path="testproject.tasks.sleep_for")
        self.assertEqual((total.released, total.failed, total.finished), (1, 0, 0))

    def test_quit_stops_at_once_and_gives_jobs_back(self) -> None:
        robust_queue.enqueue_all([(tasks.sleep_for, (20,), {}) for _ in range(3)])
        supervisor = Supervisor(self, shutdown_timeout=30)
        wait_until(lambda: ClaimedExecution.objects.count() == 3, timeout=30)
        supervisor.send(signal.SIGQUIT)
        start = time.monotonic()
        supervisor.wait(timeout=15)
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(ReadyExecution.objects.count(), 3)
        self.assertFalse(ClaimedExecution.objects.exists())

    def test_a_second_ctrl_c_stops_at_once_and_says_what_happens(self) -> None:
        """Ctrl-C (INT to the whole process group) stops gracefully; a
        second one stops now, and the running job goes back to the queue."""
        result = tasks.sleep_for.enqueue(60)
        supervisor = Supervisor(self, new_session=True, shutdown_timeout=30)
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        os.killpg(supervisor.pid, signal.SIGINT)
        wait_until(lambda: "stopping:" in supervisor.output(), timeout=10)
        self.assertTrue(is_alive(supervisor.pid), "the first Ctrl-C waits for jobs")
        os.killpg(supervisor.pid, signal.SIGINT)
        start = time.monotonic()
        self.assertEqual(supervisor.wait(timeout=20), 0)
        self.assertLess(time.monotonic() - start, 10)
        job = Job.objects.with_executions().get(result_id=result.id)
        self.assertEqual(job.state, "ready")
        self.assertEqual(job.errors, [])
        output = supervisor.output()
        self.assertIn("get 30.0s to finish, then go back to the queue", output)
        self.assertIn("stopping now: running jobs are given back to the queue", output)


class CrashTests(TransactionTestCase):
    def test_kill_9_of_a_worker_fails_its_claims_and_replaces_it(self) -> None:
        doomed = tasks.sleep_for.enqueue(30)
        supervisor = Supervisor(self)
        [worker] = supervisor.children("worker")
        wait_until(ClaimedExecution.objects.exists, timeout=30)
        os.kill(worker.pid, signal.SIGKILL)
        wait_until(lambda: Job.objects.failed().exists(), timeout=20)
        [error] = Job.objects.get(result_id=doomed.id).errors
        self.assertEqual(error["exception_class_path"], "robust_queue.exceptions.ProcessExitError")
        self.assertIn(f"pid {worker.pid}", error["traceback"])
        self.assertIn("SIGKILL", error["traceback"])
        replacement = wait_until(
            lambda: Process.objects.filter(kind="worker").exclude(pid=worker.pid).first(),
            timeout=20,
        )
        after = tasks.add.enqueue(5, 5)
        wait_until(lambda: finished_count() == 1, timeout=20)
        self.assertEqual(tasks.add.get_result(after.id).worker_ids, [replacement.name])

    def test_kill_9_mid_task_is_retried_when_the_policy_allows(self) -> None:
        result = control_tasks.crashes_once.enqueue("crash")
        # Not the app's tasks module: the workers must be told to import it.
        supervisor = Supervisor(self, task_modules=["testproject.control_tasks"])
        [worker] = supervisor.children("worker")
        wait_until(lambda: LedgerEntry.objects.filter(key="crash").exists(), timeout=30)
        os.kill(worker.pid, signal.SIGKILL)
        wait_until(lambda: finished_count() == 1, timeout=40)
        final = control_tasks.crashes_once.get_result(result.id)
        self.assertEqual(final.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(final.attempts, 2)
        self.assertEqual(
            [e.exception_class_path for e in final.errors],
            ["robust_queue.exceptions.ProcessExitError"],
        )
        self.assertEqual(LedgerEntry.objects.filter(key="crash").count(), 2)

    def test_kill_9_of_the_supervisor_stops_its_children(self) -> None:
        supervisor = Supervisor(self)
        children = [*supervisor.children("worker"), *supervisor.children("dispatcher")]
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait(timeout=10)
        for child in children:
            wait_dead(child.pid, timeout=15)
        self.assertFalse(any(is_alive(child.pid) for child in children))


class RecoveryTests(TransactionTestCase):
    def stale_claim(self, kind: str = ProcessKind.WORKER) -> tuple[str, Process]:
        result = tasks.add.enqueue(1, 1)
        process = Process.objects.create(
            kind=kind,
            name="gone-worker",
            pid=999999,
            hostname="elsewhere",
            last_heartbeat_at=timezone.now() - timedelta(hours=1),
        )
        claim(process=process)
        return result.id, process

    def test_a_silent_process_is_pruned_and_its_claims_fail(self) -> None:
        result_id, process = self.stale_claim()
        Supervisor(self)
        # The claims are failed first, then the row is dropped (two commits).
        wait_until(
            lambda: (
                Job.objects.failed().exists() and not Process.objects.filter(pk=process.pk).exists()
            ),
            timeout=30,
        )
        self.assertEqual(error_classes(result_id), ["robust_queue.exceptions.ProcessPrunedError"])

    def test_claims_of_a_missing_process_fail_at_boot(self) -> None:
        result_id, process = self.stale_claim()
        Process.objects.filter(pk=process.pk).delete()
        Supervisor(self)
        wait_until(lambda: Job.objects.failed().exists(), timeout=30)
        self.assertEqual(error_classes(result_id), ["robust_queue.exceptions.ProcessMissingError"])

    def test_a_supervisor_whose_row_is_pruned_registers_again(self) -> None:
        """It keeps its children and adopts their rows; it does not stop."""
        supervisor = Supervisor(self)
        [worker] = supervisor.children("worker")
        # Every child has registered: none inserts a row that points at the
        # supervisor's while it is being deleted (a foreign key violation).
        supervisor.children("dispatcher")
        [row] = Process.objects.filter(pid=supervisor.pid, kind="supervisor")
        Process.objects.filter(pk=row.pk).delete()

        def registered_again() -> Process | None:
            return Process.objects.filter(
                pid=supervisor.pid, kind="supervisor", supervisees__pk=worker.pk
            ).first()

        again = wait_until(registered_again, timeout=30)
        self.assertIsNotNone(again)
        self.assertTrue(is_alive(worker.pid))
        self.assertTrue(is_alive(supervisor.pid))

    def test_a_worker_pruned_while_alive_ends_each_claim_once_and_is_replaced(self) -> None:
        """It stops claiming; its claims are failed (by the pruner) or given
        back (by itself) exactly once; the queue drains; no claim is left."""
        robust_queue.enqueue_all([(tasks.record, (f"p{i}", 0.3), {}) for i in range(40)])
        supervisor = Supervisor(self, shutdown_timeout=1)
        [worker] = supervisor.children("worker")
        wait_until(lambda: ClaimedExecution.objects.filter(process=worker).count() == 3, timeout=30)
        gone = Process.objects.filter(pk=worker.pk)

        def pruned() -> bool:
            gone.update(last_heartbeat_at=timezone.now() - timedelta(hours=1))
            Process.objects.prune(threshold=60)
            return not gone.exists()

        wait_until(pruned, timeout=10)
        wait_dead(worker.pid, timeout=30)
        wait_until(
            lambda: (
                Job.objects.filter(finished_at__isnull=False).count() + Job.objects.failed().count()
                == 40
            ),
            timeout=90,
        )
        self.assertFalse(ClaimedExecution.objects.exists())
        replacement = supervisor.children("worker")[0]
        self.assertNotEqual(replacement.pid, worker.pid)
        finished = Job.objects.filter(finished_at__isnull=False)
        for job in finished:
            self.assertEqual(LedgerEntry.objects.filter(key=job.return_value).count(), 1)
        for job in Job.objects.failed():
            self.assertEqual(
                error_classes(job.result_id), ["robust_queue.exceptions.ProcessPrunedError"]
            )

    def test_claims_left_without_a_process_row_fail_after_the_settle_time(self) -> None:
        """No claim outlives its process row while the supervisor runs."""
        supervisor = Supervisor(self, workers=[])
        supervisor.children("dispatcher")
        result_id, process = self.stale_claim()
        Process.objects.filter(pk=process.pk).delete()
        # Settle time: a beat + shutdown timeout + kill grace = 8.5 s.
        wait_until(lambda: Job.objects.failed().exists(), timeout=40)
        self.assertEqual(error_classes(result_id), ["robust_queue.exceptions.ProcessMissingError"])

    def test_a_worker_whose_row_is_pruned_stops_itself(self) -> None:
        supervisor = Supervisor(self)
        [worker] = supervisor.children("worker")
        Process.objects.filter(pk=worker.pk).delete()
        wait_dead(worker.pid, timeout=15)
        replacement = supervisor.children("worker")[0]
        self.assertNotEqual(replacement.pid, worker.pid)
