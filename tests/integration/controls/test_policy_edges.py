"""Policy edges on a real database: unique keys with rate limits, retry
policies meeting unusual errors, and bad calls to batches, chains,
dependencies and cancel that must write nothing."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings

import robust_queue
from robust_queue import rate_limit, retry, unique
from robust_queue.compat import FRAMEWORK, TaskResultDoesNotExist, TaskResultStatus, task
from robust_queue.exceptions import BatchError, DependencyError
from robust_queue.models import (
    Batch,
    BlockedExecution,
    FailedExecution,
    Job,
    JobDependency,
    RateLimit,
    ReadyExecution,
    UniqueKey,
)
from robust_queue.models.retention import Retention
from testproject import other_backend, tasks
from tests.helpers import work_off

WITH_DUMMY = {
    "default": {"BACKEND": "robust_queue.backend.RobustQueueBackend"},
    "separate": {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "OPTIONS": {"database": "queue"},
    },
    "dummy": {"BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend"},
}


@unique()  # type: ignore[untyped-decorator]
@rate_limit(to=1, per=timedelta(hours=1))  # type: ignore[untyped-decorator]
@task()
def unique_rated(n: int) -> int:
    return n


RATE_KEY = f"{unique_rated.module_path}/"


class Unprintable(Exception):
    """An error whose message cannot be rendered."""

    def __str__(self) -> str:
        raise RuntimeError("no message")


# retry_on given as a list, the way people often spell it.
@retry(2, backoff="fixed", wait=timedelta(0), retry_on=[LookupError])  # type: ignore[untyped-decorator]
@task()
def raises_kind(kind: str) -> None:
    if kind == "key":
        raise KeyError("missing")
    if kind == "type":
        raise TypeError("wrong type")
    raise Unprintable()


@retry(5, backoff="fixed", wait=timedelta(0), discard_on=(ArithmeticError,))  # type: ignore[untyped-decorator]
@task()
def divides(n: int) -> float:
    return 1 / n


@retry(3, backoff="fixed", wait=timedelta(0), retry_on=())  # type: ignore[untyped-decorator]
@task()
def never_retried() -> None:
    raise ValueError("once only")


def error_classes(result_id: str) -> list[str]:
    job = Job.objects.get(result_id=result_id)
    return [error["exception_class_path"] for error in job.errors]


# Workers import task modules they are told of: this one holds tasks.
OWN_TASKS = {"task_modules": [__name__]}


@override_settings(ROBUST_QUEUE=OWN_TASKS)
class UniqueWithRateLimitTests(TestCase):
    def test_a_duplicate_of_an_admitted_job_does_not_count_against_the_window(self) -> None:
        """The unique key is checked before the rate limit: a duplicate is
        the holder's result and takes no start in the window."""
        first = unique_rated.enqueue(1)
        again = unique_rated.enqueue(1)
        self.assertEqual(again.id, first.id)
        self.assertEqual(Job.objects.count(), 1)
        self.assertEqual(RateLimit.objects.get(key=RATE_KEY).count, 1)
        self.assertEqual(
            list(ReadyExecution.objects.values_list("job__result_id", flat=True)), [first.id]
        )

    def test_a_job_waiting_on_the_rate_limit_holds_its_key(self) -> None:
        unique_rated.enqueue(1)
        waiting = unique_rated.enqueue(2)
        duplicate = unique_rated.enqueue(2)
        self.assertEqual(duplicate.id, waiting.id)
        self.assertEqual(duplicate.status, TaskResultStatus.READY)
        blocked = BlockedExecution.objects.get()
        self.assertEqual(blocked.job.result_id, waiting.id)
        self.assertEqual(blocked.concurrency_key, f"rate:{RATE_KEY}")
        self.assertEqual(Job.objects.count(), 2)
        self.assertEqual(UniqueKey.objects.count(), 2)

    def test_a_finished_holder_frees_its_key_but_not_its_window(self) -> None:
        """After the first job ran, the same arguments are a new job; the
        window is still full, so the new job waits."""
        first = unique_rated.enqueue(1)
        self.assertEqual(work_off(), 1)
        second = unique_rated.enqueue(1)
        self.assertNotEqual(second.id, first.id)
        self.assertEqual(BlockedExecution.objects.get().job.result_id, second.id)
        self.assertFalse(ReadyExecution.objects.exists())


@override_settings(ROBUST_QUEUE=OWN_TASKS)
class RetryWithUnusualErrorsTests(TestCase):
    def test_a_subclass_of_a_listed_error_is_retried_until_attempts_run_out(self) -> None:
        result = raises_kind.enqueue("key")
        self.assertEqual(work_off(), 2)
        self.assertEqual(raises_kind.get_result(result.id).status, TaskResultStatus.FAILED)
        self.assertEqual(error_classes(result.id), ["builtins.KeyError"] * 2)
        self.assertEqual(FailedExecution.objects.count(), 1)

    def test_an_error_outside_retry_on_fails_at_once(self) -> None:
        result = raises_kind.enqueue("type")
        self.assertEqual(work_off(), 1)
        self.assertEqual(error_classes(result.id), ["builtins.TypeError"])
        self.assertEqual(FailedExecution.objects.get().job.result_id, result.id)

    def test_an_error_whose_message_cannot_be_rendered_still_ends_failed(self) -> None:
        """Not in retry_on: one attempt, a failed execution, the class
        recorded; the job is not left running."""
        result = raises_kind.enqueue("unprintable")
        self.assertEqual(work_off(), 1)
        fetched = raises_kind.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.FAILED)
        self.assertEqual(
            error_classes(result.id), [f"{Unprintable.__module__}.{Unprintable.__qualname__}"]
        )

    def test_discard_on_covers_subclasses(self) -> None:
        result = divides.enqueue(0)
        self.assertEqual(work_off(), 1)
        self.assertEqual(error_classes(result.id), ["builtins.ZeroDivisionError"])
        self.assertEqual(divides.get_result(result.id).status, TaskResultStatus.FAILED)

    def test_an_empty_retry_on_retries_nothing(self) -> None:
        result = never_retried.enqueue()
        self.assertEqual(work_off(), 1)
        self.assertEqual(error_classes(result.id), ["builtins.ValueError"])
        self.assertEqual(never_retried.get_result(result.id).attempts, 1)


class BadBatchCallTests(TestCase):
    databases = {"default", "queue"}

    def test_an_unknown_backend_is_refused(self) -> None:
        with self.assertRaisesMessage(BatchError, "No task backend 'nowhere'."):
            with robust_queue.batch(backend="nowhere"):
                tasks.add.enqueue(1, 1)
        self.assertFalse(Batch.objects.exists())
        self.assertFalse(Job.objects.exists())

    def test_properties_that_are_not_a_mapping_are_refused(self) -> None:
        with self.assertRaisesMessage(BatchError, "properties must be a mapping, not [1, 2]"):
            with robust_queue.batch(properties=[1, 2]):
                pass
        with self.assertRaisesMessage(BatchError, "description must be a string"):
            with robust_queue.batch(description=5):
                pass
        self.assertFalse(Batch.objects.exists())

    def test_the_backend_follows_the_callbacks(self) -> None:
        """With no backend given, the callbacks' backend holds the batch."""
        separate = tasks.record.using(backend="separate")
        with robust_queue.batch(on_finish=separate) as created:
            pass
        stored = Batch.objects.using("queue").get()
        self.assertEqual(stored.batch_id, created.batch_id)
        self.assertEqual(stored.backend_alias, "separate")
        self.assertEqual(stored.on_finish, tasks.record.module_path)
        self.assertFalse(Batch.objects.using("default").exists())

    @override_settings(TASKS=WITH_DUMMY)
    def test_a_backend_that_is_not_robust_queue_is_refused(self) -> None:
        with self.assertRaisesMessage(
            BatchError, "Backend 'dummy' is not a Robust Queue backend: it has no batches."
        ):
            with robust_queue.batch(backend="dummy"):
                pass
        self.assertFalse(Batch.objects.exists())


class BadChainTests(TestCase):
    databases = {"default", "queue"}

    def test_steps_of_two_backends_write_nothing(self) -> None:
        """The first step is written before the second is looked at: the
        whole chain is one transaction, so it goes too."""
        separate = tasks.add.using(backend="separate")
        with self.assertRaisesMessage(
            DependencyError,
            f"Every step of a chain uses one backend: {tasks.add.module_path} uses "
            "'separate', the first step 'default'.",
        ):
            robust_queue.chain([(tasks.add, (1, 1), {}), (separate, (2, 2), {})])
        self.assertFalse(Job.objects.using("default").exists())
        self.assertFalse(Job.objects.using("queue").exists())
        self.assertFalse(JobDependency.objects.exists())

    def test_a_failed_step_after_the_first_writes_nothing(self) -> None:
        """An argument that cannot be stored in the third step undoes the
        first two."""
        with self.assertRaises(TypeError):
            robust_queue.chain(
                [
                    (tasks.add, (1, 1), {}),
                    (tasks.add, (2, 2), {}),
                    (tasks.echo, (object(),), {}),
                ]
            )
        self.assertFalse(Job.objects.exists())
        self.assertFalse(JobDependency.objects.exists())

    def test_each_step_waits_on_the_one_before(self) -> None:
        results = robust_queue.chain([(tasks.add, (1, 1), {}), (tasks.add, (2, 2), {})])
        self.assertEqual(len(results), 2)
        edge = JobDependency.objects.get()
        self.assertEqual(
            (edge.parent.result_id, edge.job.result_id), (results[0].id, results[1].id)
        )


class EnqueueAfterEdgeTests(TestCase):
    def test_a_single_result_id_is_one_parent(self) -> None:
        parent = tasks.add.enqueue(1, 1)
        child = robust_queue.enqueue_after(parent.id, tasks.add, (2, 2))
        edge = JobDependency.objects.get()
        self.assertEqual(edge.parent.result_id, parent.id)
        self.assertEqual(edge.job.result_id, child.id)

    def test_a_parent_named_twice_is_waited_on_once(self) -> None:
        parent = tasks.add.enqueue(1, 1)
        robust_queue.enqueue_after([parent, parent.id, parent], tasks.add, (2, 2))
        self.assertEqual(JobDependency.objects.count(), 1)
        work_off()
        self.assertEqual(Job.objects.filter(finished_at__isnull=False).count(), 1)
        # One release makes the child ready: no second edge holds it back.
        self.assertEqual(JobDependency.objects.using("default").release_all_in_batches(), 1)
        self.assertEqual(work_off(), 1)
        self.assertEqual(Job.objects.filter(finished_at__isnull=False).count(), 2)

    def test_a_single_task_result_is_one_parent(self) -> None:
        parent = tasks.add.enqueue(1, 1)
        robust_queue.enqueue_after(parent, tasks.add, (2, 2))
        self.assertEqual(JobDependency.objects.get().parent.result_id, parent.id)

    @override_settings(TASKS=WITH_DUMMY)
    def test_a_task_of_another_kind_of_backend_cannot_wait(self) -> None:
        shout = task(backend="dummy")(other_backend.shout)
        with self.assertRaisesMessage(
            DependencyError,
            "testproject.other_backend.shout uses backend 'dummy', which is not a Robust "
            "Queue backend: it cannot wait on other jobs.",
        ):
            robust_queue.enqueue_after(["some-id"], shout, ("hi",))
        self.assertFalse(Job.objects.exists())


class CancelAcrossBackendsTests(TestCase):
    databases = {"default", "queue"}

    def test_an_id_is_looked_up_in_its_backend_s_database_only(self) -> None:
        local = tasks.add.enqueue(1, 1)
        with self.assertRaisesMessage(TaskResultDoesNotExist, repr(local.id)):
            robust_queue.cancel(local.id, backend="separate")
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=local.id).exists())

    def test_a_job_of_the_other_backend_is_cancelled_there(self) -> None:
        remote = tasks.add.using(backend="separate").enqueue(1, 1)
        robust_queue.cancel(remote.id, backend="separate")
        failed = FailedExecution.objects.using("queue").get()
        self.assertEqual(failed.job.result_id, remote.id)
        self.assertFalse(ReadyExecution.objects.using("queue").exists())
        self.assertEqual(
            tasks.add.using(backend="separate").get_result(remote.id).status,
            TaskResultStatus.FAILED,
        )


class RetentionEdgeTests(TestCase):
    def test_failed_jobs_are_cleared_over_several_batches(self) -> None:
        for n in range(3):
            tasks.fail.enqueue(f"boom {n}")
        self.assertEqual(work_off(), 3)
        kept = tasks.add.enqueue(1, 1)
        retention = Retention(
            finished_older_than=None, failed_older_than=timedelta(seconds=-1), batch_size=2
        )
        self.assertEqual(retention.clear("default", dry_run=True), {"finished": 0, "failed": 3})
        self.assertEqual(FailedExecution.objects.count(), 3)
        self.assertEqual(retention.clear("default"), {"finished": 0, "failed": 3})
        self.assertFalse(FailedExecution.objects.exists())
        self.assertEqual(list(Job.objects.values_list("result_id", flat=True)), [kept.id])

    def test_a_failed_batch_member_cleared_before_completion_still_counts_as_failed(
        self,
    ) -> None:
        """A member that is gone counts as a success unless retention
        recorded its failure when it cleared it."""
        with robust_queue.batch(on_success=tasks.echo, on_failure=tasks.record) as created:
            tasks.fail.enqueue("boom")
        self.assertEqual(work_off(), 1)
        Retention(finished_older_than=None, failed_older_than=timedelta(seconds=-1)).clear(
            "default"
        )
        self.assertFalse(Job.objects.exists())
        self.assertEqual(Batch.objects.complete_all_in_batches(), 1)
        callbacks = list(Job.objects.values_list("task_path", "arguments"))
        self.assertEqual(
            callbacks,
            [(tasks.record.module_path, {"args": [created.batch_id], "kwargs": {}})],
        )
