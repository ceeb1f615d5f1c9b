"""Policies meeting each other on a real database: unique keys held
through retries, snoozes and cancels; rate limits inside chains, batches
and cancels; retried jobs inside batches."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings

import robust_queue
from robust_queue import Snooze, rate_limit, retry, unique
from robust_queue.compat import TaskContext, TaskResultStatus, task
from robust_queue.models import (
    Batch,
    BlockedExecution,
    FailedExecution,
    Job,
    JobDependency,
    RateLimit,
    ReadyExecution,
    ScheduledExecution,
)
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim, work_off


@unique()  # type: ignore[untyped-decorator]
@retry(2, backoff="fixed", wait=timedelta(0))  # type: ignore[untyped-decorator]
@task()
def unique_failing(n: int) -> None:
    raise ValueError(f"fails {n}")


@unique()  # type: ignore[untyped-decorator]
@task()
def unique_snoozing(n: int) -> None:
    raise Snooze(timedelta(minutes=10))


@rate_limit(to=1, per=timedelta(hours=1))  # type: ignore[untyped-decorator]
@task()
def hourly(n: int) -> int:
    return n


@retry(3, backoff="fixed", wait=timedelta(0))  # type: ignore[untyped-decorator]
@rate_limit(to=1, per=timedelta(hours=1))  # type: ignore[untyped-decorator]
@task()
def hourly_failing(n: int) -> None:
    raise ValueError(f"fails {n}")


@retry(3, backoff="fixed", wait=timedelta(0))  # type: ignore[untyped-decorator]
@task(takes_context=True)
def fails_first(context: TaskContext, n: int) -> int:
    if context.attempt == 1:
        raise ValueError("first attempt fails")
    return n


HOURLY_KEY = f"rate:{hourly.module_path}/"
# Workers import task modules they are told of: this one holds tasks.
OWN_TASKS = {"task_modules": [__name__]}


def run_once() -> int:
    claimed = claim()
    for row in claimed:
        perform(row)
    return len(claimed)


def complete() -> int:
    return Batch.objects.complete_all_in_batches()


def jobs_of(path: str) -> list[Job]:
    return list(Job.objects.filter(task_path=path).order_by("pk"))


@override_settings(ROBUST_QUEUE=OWN_TASKS)
class UniqueKeyLifetimeTests(TestCase):
    def test_a_job_waiting_to_be_retried_still_holds_its_key(self) -> None:
        first = unique_failing.enqueue(1)
        self.assertEqual(run_once(), 1)
        self.assertEqual(unique_failing.get_result(first.id).status, TaskResultStatus.READY)
        again = unique_failing.enqueue(1)
        self.assertEqual(again.id, first.id)
        self.assertEqual(Job.objects.count(), 1)

    def test_a_job_that_failed_for_good_frees_its_key(self) -> None:
        first = unique_failing.enqueue(1)
        self.assertEqual(work_off(), 2)
        self.assertEqual(unique_failing.get_result(first.id).status, TaskResultStatus.FAILED)
        again = unique_failing.enqueue(1)
        self.assertNotEqual(again.id, first.id)
        self.assertEqual(again.status, TaskResultStatus.READY)
        self.assertEqual(Job.objects.count(), 2)

    def test_a_snoozed_job_still_holds_its_key(self) -> None:
        first = unique_snoozing.enqueue(1)
        self.assertEqual(run_once(), 1)
        self.assertEqual(ScheduledExecution.objects.get().job.result_id, first.id)
        again = unique_snoozing.enqueue(1)
        self.assertEqual(again.id, first.id)
        self.assertEqual(Job.objects.count(), 1)

    def test_a_cancelled_job_frees_its_key(self) -> None:
        first = unique_snoozing.enqueue(1)
        robust_queue.cancel(first.id)
        again = unique_snoozing.enqueue(1)
        self.assertNotEqual(again.id, first.id)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=again.id).exists())
        self.assertEqual(FailedExecution.objects.get().job.result_id, first.id)


@override_settings(ROBUST_QUEUE=OWN_TASKS)
class RateLimitMeetsOtherPoliciesTests(TestCase):
    def test_a_released_chain_step_waits_on_its_own_rate_limit(self) -> None:
        """Dependencies release a job into dispatch like any other: a full
        window makes it wait on the rate limit, not run."""
        first, second = robust_queue.chain([(hourly, (1,), {}), (hourly, (2,), {})])
        self.assertEqual(work_off(), 1)
        self.assertEqual(JobDependency.objects.release_all_in_batches(), 1)
        self.assertFalse(ReadyExecution.objects.exists())
        waiting = BlockedExecution.objects.get()
        self.assertEqual(waiting.job.result_id, second.id)
        self.assertEqual(waiting.concurrency_key, HOURLY_KEY)
        self.assertEqual(hourly.get_result(first.id).status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(hourly.get_result(second.id).status, TaskResultStatus.READY)

    def test_a_retry_waits_on_the_rate_limit_like_any_dispatch(self) -> None:
        """The failed attempt took the window's one start: the retry, due
        at once, waits for the next window instead of running."""
        result = hourly_failing.enqueue(1)
        self.assertEqual(run_once(), 1)
        self.assertEqual(run_once(), 0)
        waiting = BlockedExecution.objects.get()
        self.assertEqual(waiting.job.result_id, result.id)
        self.assertEqual(waiting.concurrency_key, f"rate:{hourly_failing.module_path}/")
        self.assertEqual(RateLimit.objects.get().count, 1)
        fetched = hourly_failing.get_result(result.id)
        self.assertEqual((fetched.status, len(fetched.errors)), (TaskResultStatus.READY, 1))

    def test_cancelling_a_job_waiting_on_a_rate_limit_frees_no_start(self) -> None:
        hourly.enqueue(1)
        waiting = hourly.enqueue(2)
        robust_queue.cancel(waiting.id)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertEqual(RateLimit.objects.get().count, 1)
        newcomer = hourly.enqueue(3)
        self.assertEqual(BlockedExecution.objects.get().job.result_id, newcomer.id)
        self.assertEqual(hourly.get_result(waiting.id).status, TaskResultStatus.FAILED)

    def test_a_batch_is_not_complete_while_a_member_waits_on_a_rate_limit(self) -> None:
        with robust_queue.batch(on_success=tasks.echo) as created:
            hourly.enqueue(1)
            hourly.enqueue(2)
        self.assertEqual(work_off(), 1)
        self.assertEqual(complete(), 0)
        self.assertEqual(jobs_of(tasks.echo.module_path), [])
        self.assertIsNone(Batch.objects.get(batch_id=created.batch_id).completed_at)


@override_settings(ROBUST_QUEUE=OWN_TASKS)
class RetriedBatchMemberTests(TestCase):
    def test_a_member_that_succeeds_on_a_retry_counts_as_a_success(self) -> None:
        with robust_queue.batch(
            on_success=tasks.echo, on_failure=tasks.record, on_finish=tasks.add
        ) as created:
            result = fails_first.enqueue(7)
        self.assertEqual(run_once(), 1)
        self.assertEqual(complete(), 0, "a member waiting on a retry keeps the batch open")
        self.assertEqual(run_once(), 1)
        self.assertEqual(fails_first.get_result(result.id).status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(complete(), 1)
        self.assertEqual([j.args for j in jobs_of(tasks.echo.module_path)], [[created.batch_id]])
        self.assertEqual(jobs_of(tasks.record.module_path), [])
        self.assertEqual(len(jobs_of(tasks.add.module_path)), 1)

    def test_a_snoozed_member_keeps_its_batch_open(self) -> None:
        with robust_queue.batch(on_finish=tasks.echo) as created:
            snoozed = unique_snoozing.enqueue(5)
        self.assertEqual(run_once(), 1)
        self.assertEqual(ScheduledExecution.objects.get().job.result_id, snoozed.id)
        self.assertEqual(complete(), 0)
        self.assertIsNone(Batch.objects.get(batch_id=created.batch_id).completed_at)
        self.assertEqual(jobs_of(tasks.echo.module_path), [])

    def test_a_member_that_fails_after_its_retries_fires_on_failure(self) -> None:
        with robust_queue.batch(on_success=tasks.echo, on_failure=tasks.record) as created:
            unique_failing.enqueue(3)
        self.assertEqual(run_once(), 1)
        self.assertEqual(complete(), 0)
        self.assertEqual(run_once(), 1)
        self.assertEqual(complete(), 1)
        self.assertEqual(jobs_of(tasks.echo.module_path), [])
        self.assertEqual([j.args for j in jobs_of(tasks.record.module_path)], [[created.batch_id]])
