"""Dependencies: a job enqueued after others waits (READY to Django) until
they all succeed, fails with DependencyFailedError when one fails for good,
is cancelled or discarded, and bad parents are refused with nothing written."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings
from django.utils import timezone

import robust_queue
from robust_queue.compat import TaskResultStatus
from robust_queue.exceptions import DependencyError, EnqueueError, RobustQueueError
from robust_queue.models import (
    BlockedExecution,
    FailedExecution,
    Job,
    JobDependency,
    ReadyExecution,
    ScheduledExecution,
)
from robust_queue.models.retention import Retention
from robust_queue.processes.config import DispatcherConfig
from robust_queue.processes.dispatcher import Dispatcher
from testproject import tasks, unique_tasks
from testproject.models import LedgerEntry
from tests.helpers import work_off

DEPENDENCY_FAILED = "robust_queue.exceptions.DependencyFailedError"


def release() -> int:
    return JobDependency.objects.release_all_in_batches()


def run_all() -> None:
    """Work off ready jobs and release waiting ones until nothing moves."""
    while work_off() + release():
        pass


def last_error(result_id: str) -> str:
    return str(Job.objects.get(result_id=result_id).errors[-1]["exception_class_path"])


class EnqueueAfterTests(TestCase):
    def test_a_waiting_job_is_ready_to_django_and_blocked_on_its_parents(self) -> None:
        """A job waiting on an unfinished parent is READY (get_result too)
        and holds one dependency row per parent it still waits on."""
        parent = tasks.add.enqueue(1, 2)
        child = robust_queue.enqueue_after([parent], tasks.add, (3, 4))
        self.assertEqual(child.status, TaskResultStatus.READY)
        self.assertEqual(tasks.add.get_result(child.id).status, TaskResultStatus.READY)
        blocked = BlockedExecution.objects.get(job__result_id=child.id)
        self.assertEqual(blocked.concurrency_key, "dep:")
        self.assertEqual(JobDependency.objects.filter(job=blocked.job).count(), 1)
        self.assertEqual(release(), 0)
        self.assertEqual(BlockedExecution.objects.count(), 1)

    def test_the_child_runs_after_its_parents_succeed(self) -> None:
        """Ids and TaskResults both name parents; the child becomes ready
        only once every parent has finished."""
        first = tasks.record.enqueue("first")
        second = tasks.record.enqueue("second")
        child = robust_queue.enqueue_after([first, second.id], tasks.record, ("child",))
        work_off()
        self.assertEqual(release(), 1)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=child.id).exists())
        self.assertFalse(JobDependency.objects.exists())
        work_off()
        self.assertEqual(tasks.record.get_result(child.id).status, TaskResultStatus.SUCCESSFUL)

    def test_a_child_waits_while_one_parent_still_runs(self) -> None:
        """Rows of parents that succeeded are dropped; the job keeps
        waiting on the rest."""
        done = tasks.add.enqueue(1, 1)
        later = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(2, 2)
        work_off()
        child = robust_queue.enqueue_after([done, later], tasks.add, (0, 0))
        self.assertEqual(JobDependency.objects.count(), 1)
        self.assertEqual(release(), 0)
        self.assertTrue(BlockedExecution.objects.filter(job__result_id=child.id).exists())

    def test_a_parent_that_already_succeeded_counts_as_done(self) -> None:
        parent = tasks.add.enqueue(1, 2)
        work_off()
        child = robust_queue.enqueue_after([parent], tasks.add, (3, 4))
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=child.id).exists())
        self.assertFalse(JobDependency.objects.exists())

    def test_a_released_child_keeps_its_run_after(self) -> None:
        parent = tasks.add.enqueue(1, 2)
        at = timezone.now() + timedelta(hours=1)
        child = robust_queue.enqueue_after([parent], tasks.add.using(run_after=at), (3, 4))
        work_off()
        self.assertEqual(release(), 1)
        self.assertEqual(ScheduledExecution.objects.get(job__result_id=child.id).scheduled_at, at)

    def test_the_dispatcher_releases_waiting_jobs(self) -> None:
        parent = tasks.add.enqueue(1, 2)
        child = robust_queue.enqueue_after(parent.id, tasks.add, (3, 4))
        work_off()
        Dispatcher(DispatcherConfig(), using="default", heartbeat_interval=60).run_once()
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=child.id).exists())

    @override_settings(ROBUST_QUEUE={"preserve_finished_jobs": False})
    def test_a_parent_deleted_after_success_counts_as_succeeded(self) -> None:
        """Without preserved finished jobs the parent's row is gone when the
        child is checked: gone without a failure mark is a success."""
        parent = tasks.add.enqueue(1, 2)
        child = robust_queue.enqueue_after([parent], tasks.add, (3, 4))
        work_off()
        self.assertFalse(Job.objects.filter(result_id=parent.id).exists())
        self.assertEqual(release(), 1)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=child.id).exists())


class ChainTests(TestCase):
    def test_a_chain_runs_its_steps_in_order(self) -> None:
        results = robust_queue.chain(
            [(tasks.record, ("a",), {}), (tasks.record, ("b",), {}), (tasks.record, ("c",), {})]
        )
        self.assertEqual(ReadyExecution.objects.count(), 1)
        run_all()
        self.assertEqual(
            list(LedgerEntry.objects.order_by("pk").values_list("key", flat=True)), ["a", "b", "c"]
        )
        for result in results:
            self.assertEqual(tasks.record.get_result(result.id).status, TaskResultStatus.SUCCESSFUL)

    def test_a_chain_may_start_after_other_jobs(self) -> None:
        first = tasks.record.enqueue("first")
        robust_queue.chain([tasks.returns_set, (tasks.record, ("b",), {})], after=[first])
        self.assertEqual(BlockedExecution.objects.count(), 2)

    def test_a_chain_after_one_id_or_one_result_waits_on_that_job(self) -> None:
        first = tasks.record.enqueue("first")
        for after in (first.id, first):
            with self.subTest(after=type(after).__name__):
                [step] = robust_queue.chain([tasks.returns_set], after=after)
                child = Job.objects.get(result_id=step.id)
                self.assertEqual(
                    list(child.dependencies.values_list("parent__result_id", flat=True)),
                    [first.id],
                )

    def test_a_bad_step_writes_nothing(self) -> None:
        with self.assertRaisesMessage(DependencyError, "A chain step is a Task"):
            robust_queue.chain([tasks.add, "not a task"])
        with self.assertRaisesMessage(DependencyError, "at least one step"):
            robust_queue.chain([])
        self.assertFalse(Job.objects.exists())


class FailureTests(TestCase):
    def test_a_failure_fails_the_dependents_two_levels_down(self) -> None:
        parent = tasks.fail.enqueue("boom")
        child = robust_queue.enqueue_after([parent], tasks.add, (1, 1))
        grandchild = robust_queue.enqueue_after([child], tasks.add, (2, 2))
        run_all()
        self.assertEqual(tasks.fail.get_result(parent.id).status, TaskResultStatus.FAILED)
        for result in (child, grandchild):
            self.assertEqual(tasks.add.get_result(result.id).status, TaskResultStatus.FAILED)
            self.assertEqual(last_error(result.id), DEPENDENCY_FAILED)
        self.assertIn(parent.id, Job.objects.get(result_id=child.id).errors[-1]["traceback"])
        self.assertFalse(JobDependency.objects.exists())
        self.assertFalse(BlockedExecution.objects.exists())

    def test_cancelling_a_parent_fails_its_dependents(self) -> None:
        parent = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
        other = tasks.add.enqueue(5, 5)
        child = robust_queue.enqueue_after([parent, other], tasks.add, (2, 2))
        robust_queue.cancel(parent.id)
        self.assertEqual(release(), 1)
        self.assertEqual(last_error(child.id), DEPENDENCY_FAILED)
        self.assertTrue(FailedExecution.objects.filter(job__result_id=child.id).exists())
        self.assertFalse(JobDependency.objects.exists())

    def test_discarding_a_waiting_parent_fails_its_dependents(self) -> None:
        """A discarded parent is gone but marked: not read as a success."""
        parent = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
        child = robust_queue.enqueue_after([parent], tasks.add, (2, 2))
        self.assertIs(Job.objects.get(result_id=parent.id).discard(), True)
        self.assertEqual(release(), 1)
        self.assertEqual(last_error(child.id), DEPENDENCY_FAILED)

    def test_clearing_a_failed_parent_fails_its_dependents(self) -> None:
        """Retention that clears a failed parent before the dispatcher saw it
        leaves the mark: the dependents still fail."""
        parent = tasks.fail.enqueue("boom")
        child = robust_queue.enqueue_after([parent], tasks.add, (2, 2))
        work_off()
        FailedExecution.objects.update(created_at=timezone.now() - timedelta(days=30))
        Retention(finished_older_than=None, failed_older_than=timedelta(days=1)).clear("default")
        self.assertFalse(Job.objects.filter(result_id=parent.id).exists())
        self.assertEqual(release(), 1)
        self.assertEqual(last_error(child.id), DEPENDENCY_FAILED)

    def test_a_cancelled_waiting_job_leaves_no_rows_behind(self) -> None:
        """A waiting job can be cancelled; its rows go when its parent settles."""
        parent = tasks.add.enqueue(1, 1)
        child = robust_queue.enqueue_after([parent], tasks.add, (2, 2))
        robust_queue.cancel(child.id)
        work_off()
        self.assertEqual(release(), 0)
        self.assertFalse(JobDependency.objects.exists())
        self.assertEqual(tasks.add.get_result(child.id).status, TaskResultStatus.FAILED)


class UniqueChildTests(TestCase):
    def test_a_unique_child_whose_key_is_held_is_the_holder_unchanged(self) -> None:
        """As documented: a unique duplicate writes nothing, so the holder
        does not gain the new parents (it may already run)."""
        holder = unique_tasks.per_account.enqueue("acme", 1)
        parent = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
        child = robust_queue.enqueue_after([parent], unique_tasks.per_account, ("acme", 2))
        self.assertEqual(child.id, holder.id)
        self.assertFalse(JobDependency.objects.exists())
        self.assertEqual(work_off(), 1)
        self.assertEqual(unique_tasks.per_account.get_result(holder.id).return_value, 1)


class BadParentTests(TestCase):
    databases = {"default", "queue"}

    def test_an_unknown_parent_is_refused_and_nothing_is_written(self) -> None:
        parent = tasks.add.enqueue(1, 1)
        with self.assertRaisesMessage(DependencyError, "no job of database 'default' has that id"):
            robust_queue.enqueue_after([parent.id, "unknown-id"], tasks.add, (2, 2))
        self.assertEqual(Job.objects.count(), 1)
        self.assertFalse(JobDependency.objects.exists())

    def test_a_parent_of_another_backend_is_refused(self) -> None:
        other = tasks.add.using(backend="separate").enqueue(1, 1)
        with self.assertRaisesMessage(DependencyError, "of backend 'default' cannot wait on"):
            robust_queue.enqueue_after([other], tasks.add, (2, 2))
        with self.assertRaisesMessage(DependencyError, "no job of database 'default'"):
            robust_queue.enqueue_after([other.id], tasks.add, (2, 2))
        self.assertFalse(Job.objects.exists())

    def test_a_job_of_another_backend_in_this_database_is_refused(self) -> None:
        parent = tasks.add.enqueue(1, 1)
        Job.objects.update(backend_alias="separate")
        with self.assertRaisesMessage(
            DependencyError, f"cannot wait on job {parent.id} of backend 'separate'"
        ):
            robust_queue.enqueue_after([parent.id], tasks.add, (2, 2))
        self.assertEqual(Job.objects.count(), 1)

    def test_a_parent_that_failed_for_good_is_refused(self) -> None:
        parent = tasks.fail.enqueue("boom")
        work_off()
        with self.assertRaisesMessage(DependencyError, "it has failed for good"):
            robust_queue.enqueue_after([parent], tasks.add, (2, 2))
        self.assertEqual(Job.objects.count(), 1)

    def test_no_parents_and_wrong_types_are_refused(self) -> None:
        with self.assertRaisesMessage(DependencyError, "needs at least one parent"):
            robust_queue.enqueue_after([], tasks.add, (2, 2))
        with self.assertRaisesMessage(DependencyError, "A parent is a result id or a TaskResult"):
            robust_queue.enqueue_after([42], tasks.add, (2, 2))  # type: ignore[list-item]
        with self.assertRaisesMessage(DependencyError, "Only a Task can wait"):
            robust_queue.enqueue_after(["x"], tasks.add.func, ())  # type: ignore[arg-type]
        self.assertFalse(Job.objects.exists())

    def test_dependency_errors_are_enqueue_errors(self) -> None:
        self.assertTrue(issubclass(DependencyError, EnqueueError))
        self.assertTrue(issubclass(DependencyError, RobustQueueError))
