"""Exactly one of N concurrent enqueues of a key wins, with real threads
and connections (SQLite runs them one after another: one writer at a time)."""

from __future__ import annotations

import threading

from django.test import TransactionTestCase

import robust_queue
from robust_queue.compat import TaskResult, TaskResultStatus
from robust_queue.models import Job, UniqueKey
from testproject import unique_tasks as ut
from tests.helpers import run_in_threads, work_off

THREADS = 8


def racing(call: object, count: int = THREADS) -> list[TaskResult]:
    """Run ``call`` in ``count`` threads released at the same instant."""
    barrier = threading.Barrier(count)

    def target() -> object:
        barrier.wait(timeout=30)
        return call()  # type: ignore[operator]

    return run_in_threads([target] * count)  # type: ignore[return-value]


class UniqueRaceTests(TransactionTestCase):
    def test_one_of_many_concurrent_enqueues_writes_the_job(self) -> None:
        results = racing(lambda: ut.by_arguments.enqueue(1, label="race"))
        job = Job.objects.get()
        self.assertEqual({r.id for r in results}, {job.result_id})
        self.assertEqual({r.status for r in results}, {TaskResultStatus.READY})
        self.assertEqual(UniqueKey.objects.get().result_id, job.result_id)

    def test_one_of_many_concurrent_enqueues_takes_over_a_released_key(self) -> None:
        """The holder finished (it no longer counts): one new job, not N."""
        old = ut.by_arguments.enqueue(2)
        work_off()
        results = racing(lambda: ut.by_arguments.enqueue(2))
        new = Job.objects.exclude(result_id=old.id).get()
        self.assertEqual({r.id for r in results}, {new.result_id})
        self.assertEqual(UniqueKey.objects.get().result_id, new.result_id)

    def test_concurrent_bulk_enqueues_in_any_order_neither_deadlock_nor_duplicate(
        self,
    ) -> None:
        keys = [f"account-{i}" for i in range(6)]
        orders = [keys, keys[::-1], keys[2:] + keys[:2], keys[::2] + keys[1::2]]

        def bulk(order: list[str]) -> list[TaskResult]:
            return robust_queue.enqueue_all([(ut.per_account, (k,), {}) for k in order])

        barrier = threading.Barrier(len(orders))

        def target(order: list[str]) -> list[TaskResult]:
            barrier.wait(timeout=30)
            return bulk(order)

        outcomes = run_in_threads([lambda o=o: target(o) for o in orders])
        self.assertEqual(Job.objects.count(), len(keys))
        ids = {k: set() for k in keys}  # type: dict[str, set[str]]
        for order, results in zip(orders, outcomes, strict=True):
            for key, result in zip(order, results, strict=True):  # type: ignore[call-overload]
                ids[key].add(result.id)
        self.assertEqual([len(found) for found in ids.values()], [1] * len(keys))

    def test_one_of_many_concurrent_idempotent_enqueues_wins(self) -> None:
        results = racing(lambda: robust_queue.enqueue_once(ut.plain, "order-1", 1))
        self.assertEqual({r.id for r in results}, {Job.objects.get().result_id})
