"""Concurrency limits: block, release, discard, expire (single connection)."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue import limits_concurrency
from robust_queue.compat import (
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from robust_queue.exceptions import ConfigurationError, EnqueueError
from robust_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
)
from robust_queue.processes.dispatcher import ConcurrencyMaintenance
from robust_queue.running.performing import perform
from testproject import control_tasks as ct
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, work_off

KEY = "testproject.control_tasks.limited/acme"


def states() -> dict[str, int]:
    return {
        "ready": ReadyExecution.objects.count(),
        "blocked": BlockedExecution.objects.count(),
        "claimed": ClaimedExecution.objects.count(),
    }


class BlockAndReleaseTests(TestCase):
    def test_jobs_over_the_limit_are_blocked(self) -> None:
        results = [ct.limited.enqueue("acme", f"j{i}") for i in range(3)]
        other = ct.limited.enqueue("globex", "g")
        self.assertEqual(states(), {"ready": 3, "blocked": 1, "claimed": 0})
        blocked = BlockedExecution.objects.get()
        self.assertEqual(blocked.job.result_id, results[2].id)
        self.assertEqual(blocked.concurrency_key, KEY)
        self.assertEqual(Semaphore.objects.get(key=KEY).value, 0)
        self.assertEqual(ct.limited.get_result(results[2].id).status, TaskResultStatus.READY)
        self.assertEqual(
            Job.objects.get(result_id=other.id).concurrency_key,
            "testproject.control_tasks.limited/globex",
        )

    def test_finishing_a_job_unblocks_the_next_by_priority(self) -> None:
        ct.limited.enqueue("acme", "a")
        ct.limited.enqueue("acme", "b")
        low = ct.limited.using(priority=-5).enqueue("acme", "low")
        high = ct.limited.using(priority=5).enqueue("acme", "high")
        first, _ = claim()
        self.assertIs(perform(first), True)
        ready = ReadyExecution.objects.get()
        self.assertEqual(ready.job.result_id, high.id)
        self.assertEqual(BlockedExecution.objects.get().job.result_id, low.id)
        self.assertEqual(Semaphore.objects.get(key=KEY).value, 0)

    def test_failing_a_job_releases_its_slot(self) -> None:
        ct.limited.enqueue("acme", "a")
        ct.limited.enqueue("acme", "b")
        waiting = ct.limited.enqueue("acme", "c")
        first, _ = claim()
        first.fail({"exception_class_path": "x.Y", "traceback": ""})
        self.assertEqual(ReadyExecution.objects.get().job.result_id, waiting.id)

    def test_all_jobs_of_a_key_run_to_the_end(self) -> None:
        for i in range(7):
            ct.limited.enqueue("acme", f"j{i}")
        self.assertEqual(work_off(limit=1), 7)
        self.assertEqual(Job.objects.finished().count(), 7)
        self.assertEqual(Semaphore.objects.get(key=KEY).value, 2)

    def test_a_released_claim_keeps_its_slot(self) -> None:
        ct.short_lease.enqueue("a")
        ct.short_lease.enqueue("b")
        [claimed] = claim()
        claimed.release()
        self.assertEqual(states(), {"ready": 1, "blocked": 1, "claimed": 0})
        self.assertEqual(Semaphore.objects.get().value, 0)

    def test_a_retried_job_gives_its_slot_to_the_next(self) -> None:
        ct.short_lease.enqueue("a")
        waiting = ct.short_lease.enqueue("b")
        [claimed] = claim()
        claimed.fail({"exception_class_path": "x.Y", "traceback": ""}, retry_in=timedelta(hours=1))
        self.assertEqual(ReadyExecution.objects.get().job.result_id, waiting.id)
        self.assertEqual(ScheduledExecution.objects.get().job_id, claimed.job_id)

    def test_groups_share_keys_across_tasks(self) -> None:
        ct.grouped_a.enqueue("x")
        ct.grouped_b.enqueue("y")
        self.assertEqual(BlockedExecution.objects.get().concurrency_key, "grouped/shared")

    def test_model_instances_count_by_class_and_pk(self) -> None:
        entry = LedgerEntry.objects.create(key="k")
        ct.per_object.enqueue(entry)
        ct.per_object.enqueue(LedgerEntry.objects.get(pk=entry.pk))
        key = f"testproject.control_tasks.per_object/testproject.ledgerentry:{entry.pk}"
        self.assertEqual(BlockedExecution.objects.get().concurrency_key, key)

    def test_a_scheduled_job_takes_its_slot_when_dispatched(self) -> None:
        ct.short_lease.enqueue("now")
        later = ct.short_lease.using(run_after=timezone.now() + timedelta(hours=1))
        later.enqueue("later")
        self.assertEqual(ScheduledExecution.objects.count(), 1)
        ScheduledExecution.objects.update(scheduled_at=timezone.now())
        ScheduledExecution.objects.dispatch_next_batch(10)
        self.assertEqual(states(), {"ready": 1, "blocked": 1, "claimed": 0})

    def test_jobs_without_a_limit_are_untouched(self) -> None:
        tasks.add.enqueue(1, 2)
        self.assertEqual(Job.objects.get().concurrency_key, "")
        self.assertFalse(Semaphore.objects.exists())


class DiscardOnConflictTests(TestCase):
    def test_a_job_over_the_limit_is_dropped_at_enqueue(self) -> None:
        kept = ct.discarding.enqueue("a")
        dropped = ct.discarding.enqueue("b")
        self.assertEqual(Job.objects.get().result_id, kept.id)
        self.assertFalse(BlockedExecution.objects.exists())
        with self.assertRaises(TaskResultDoesNotExist):
            ct.discarding.get_result(dropped.id)
        work_off()
        ct.discarding.enqueue("c")
        self.assertEqual(ReadyExecution.objects.count(), 1)

    def test_a_discarded_enqueue_returns_an_honest_failed_result(self) -> None:
        """Not READY: the job will never run, and its error says why."""
        enqueued: list[str] = []

        def receiver(sender: object, task_result: TaskResult, **kwargs: object) -> None:
            enqueued.append(task_result.id)

        task_enqueued.connect(receiver)
        self.addCleanup(task_enqueued.disconnect, receiver)
        kept = ct.discarding.enqueue("a")
        dropped = ct.discarding.enqueue("b")
        self.assertEqual(dropped.status, TaskResultStatus.FAILED)
        self.assertIsNotNone(dropped.finished_at)
        [error] = dropped.errors
        self.assertEqual(
            error.exception_class_path, "robust_queue.exceptions.DiscardedOnConflictError"
        )
        self.assertIn("on_conflict='discard'", error.traceback)
        self.assertIn(dropped.id, error.traceback)
        with self.assertRaisesMessage(ValueError, "Task failed"):
            dropped.return_value  # noqa: B018
        self.assertEqual(enqueued, [kept.id])

    def test_bulk_enqueue_reports_each_discard(self) -> None:
        results = robust_queue.enqueue_all(
            [(ct.discarding, ("a",), {}), (ct.discarding, ("b",), {}), (tasks.add, (1, 2), {})]
        )
        self.assertEqual(
            [r.status for r in results],
            [TaskResultStatus.READY, TaskResultStatus.FAILED, TaskResultStatus.READY],
        )
        self.assertEqual(Job.objects.count(), 2)


class MaintenanceTests(TestCase):
    def test_the_dispatcher_runs_maintenance_once_per_interval(self) -> None:
        maintenance = ConcurrencyMaintenance("default", interval=3600)
        self.assertEqual(maintenance.run_if_due(), 0)
        ct.limited.enqueue("acme", "a")
        ct.limited.enqueue("acme", "b")
        ct.limited.enqueue("acme", "c")
        Semaphore.objects.update(value=1)  # a slot to give out
        self.assertIsNone(maintenance.run_if_due(), "not due again within the hour")
        self.assertEqual(BlockedExecution.objects.count(), 1)

    def test_an_expired_lease_lets_the_next_job_run(self) -> None:
        ct.short_lease.enqueue("stuck")
        waiting = ct.short_lease.enqueue("waiting")
        claim()  # never finishes, e.g. a hung worker
        self.assertEqual(ConcurrencyMaintenance("default", interval=0).run(), 0)
        past = timezone.now() - timedelta(seconds=1)
        Semaphore.objects.update(expires_at=past)
        BlockedExecution.objects.update(expires_at=past)
        self.assertEqual(ConcurrencyMaintenance("default", interval=0).run(), 1)
        self.assertEqual(ReadyExecution.objects.get().job.result_id, waiting.id)

    def test_blocked_jobs_whose_key_has_room_are_released(self) -> None:
        """A slot freed while a blocked row was being written is not lost."""
        ct.limited.enqueue("acme", "a")
        ct.limited.enqueue("acme", "b")
        ct.limited.enqueue("acme", "c")
        Semaphore.objects.update(value=1)  # as if a finish raced the block
        self.assertEqual(ConcurrencyMaintenance("default", interval=0).run(), 1)
        self.assertEqual(states(), {"ready": 3, "blocked": 0, "claimed": 0})
        self.assertEqual(Semaphore.objects.get().value, 0)

    def test_blocked_run_now_bypasses_the_limit(self) -> None:
        ct.short_lease.enqueue("a")
        ct.short_lease.enqueue("b")
        self.assertEqual(BlockedExecution.objects.all().dispatch_now(), 1)
        self.assertEqual(states(), {"ready": 2, "blocked": 0, "claimed": 0})
        work_off()
        self.assertEqual(Semaphore.objects.get().value, 1)


class BadInputTests(TestCase):
    def test_a_key_that_raises_fails_the_enqueue_and_writes_nothing(self) -> None:
        with self.assertRaisesMessage(EnqueueError, "bad_key could not be computed"):
            robust_queue.enqueue_all([(tasks.add, (1, 2), {}), (ct.bad_key, (0,), {})])
        self.assertFalse(Job.objects.exists())
        self.assertFalse(Semaphore.objects.exists())

    def test_invalid_limits_fail_at_decoration(self) -> None:
        cases = [
            ({"key": "k", "to": 0}, "'to' must be an integer >= 1"),
            ({"key": "k", "on_conflict": "ignore"}, "'on_conflict' must be"),
            ({"key": 3}, "'key' must be a string or a callable"),
            ({"key": "k", "duration": timedelta(0)}, "'duration' must be"),
        ]
        for kwargs, message in cases:
            with self.subTest(kwargs), self.assertRaisesMessage(ConfigurationError, message):
                limits_concurrency(**kwargs)

    def test_the_decorator_goes_over_task(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "stacked over @task"):
            limits_concurrency("k")(lambda: None)  # type: ignore[arg-type]
