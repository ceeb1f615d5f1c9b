"""Rate limits under concurrency: concurrent enqueues of one key admit
exactly ``to`` per window and lose nothing; a hot key's lock holds up no
claim and no other key."""

from __future__ import annotations

import threading
import time
import unittest

from django.db import connection, transaction
from django.test import TransactionTestCase

import robust_queue
from robust_queue.models import BlockedExecution, Job, RateLimit, ReadyExecution
from testproject import coordination_tasks as co
from testproject import tasks
from tests.connections import LOCK_POLL, waiting_on_locks
from tests.helpers import make_process, run_in_threads, wait_until

ENQUEUERS = 8
PER_THREAD = 5


@unittest.skipIf(connection.vendor == "sqlite", "SQLite lets one writer in at a time")
class RateLimitRaceTests(TransactionTestCase):
    def test_concurrent_enqueues_of_one_key_admit_exactly_to(self) -> None:
        def enqueue() -> list[str]:
            return [co.rated.enqueue("hot", n).id for n in range(PER_THREAD)]

        results = run_in_threads([enqueue] * ENQUEUERS)
        ids = {result_id for batch in results for result_id in batch}  # type: ignore[attr-defined]
        self.assertEqual(len(ids), ENQUEUERS * PER_THREAD)
        self.assertEqual(ReadyExecution.objects.count(), 2)
        waiting = BlockedExecution.objects.filter(concurrency_key__startswith="rate:")
        self.assertEqual(waiting.count(), ENQUEUERS * PER_THREAD - 2)
        self.assertEqual(RateLimit.objects.get().count, 2)
        self.assertEqual(Job.objects.count(), ENQUEUERS * PER_THREAD)

    def test_a_held_key_lock_holds_up_no_claim_and_no_other_key(self) -> None:
        """While a transaction holds the hot key's row (a long enqueue), ready
        jobs (of that task too) are claimed at once and other keys enqueue at
        once; only an enqueue of the hot key waits for the commit.

        The other key has been seen before: on MySQL/MariaDB the first
        enqueue of a new key may wait on its neighbour in the key index
        (see docs/reference/coordination.md)."""
        co.rated.enqueue("hot", 0)
        co.rated.enqueue("cold", 0)
        robust_queue.enqueue_all([(tasks.add, (i, i), {}) for i in range(3)])
        process = make_process()
        locked, release = threading.Event(), threading.Event()
        ended: dict[str, float] = {}

        def hold() -> None:
            with transaction.atomic():
                RateLimit.objects.select_for_update().get(
                    key="testproject.coordination_tasks.rated/hot"
                )
                locked.set()
                release.wait(60)

        def timed(name: str, action: object) -> object:
            locked.wait(10)
            value = action()  # type: ignore[operator]
            ended[name] = time.monotonic()
            return value

        def let_go() -> None:
            # Facts, not durations: the claim and the other key's enqueue
            # have returned, and the hot key's waits on the lock.
            locked.wait(10)
            done = ("claim", "other key")
            wait_until(
                lambda: all(n in ended for n in done) and waiting_on_locks(),
                timeout=30,
                interval=LOCK_POLL,
            )
            ended["released"] = time.monotonic()
            release.set()

        # The jobs enqueued meanwhile go to another queue: the claim's count
        # does not depend on which thread runs first.
        claim = lambda: len(  # noqa: E731
            ReadyExecution.objects.claim(
                10, process_id=process.pk, worker_id="w", queue_name="default"
            )
        )
        _, claimed, _, _, _ = run_in_threads(
            [
                hold,
                lambda: timed("claim", claim),
                lambda: timed(
                    "other key", lambda: co.rated.using(queue_name="later").enqueue("cold", 1)
                ),
                lambda: timed(
                    "hot key", lambda: co.rated.using(queue_name="later").enqueue("hot", 2)
                ),
                let_go,
            ]
        )
        self.assertEqual(claimed, 5, "the two keys' ready jobs and the plain ones")
        self.assertLess(ended["claim"], ended["released"])
        self.assertLess(ended["other key"], ended["released"])
        self.assertGreater(ended["hot key"], ended["released"])

    def test_the_release_skips_a_key_another_transaction_holds(self) -> None:
        for n in range(3):
            co.rated.enqueue("hot", n)
        RateLimit.objects.update(next_release=RateLimit.objects.get().window_start)
        locked, release = threading.Event(), threading.Event()

        def hold() -> None:
            with transaction.atomic():
                RateLimit.objects.select_for_update().get()
                locked.set()
                release.wait(10)

        def release_due() -> tuple[int, float]:
            locked.wait(10)
            started = time.monotonic()
            released = RateLimit.objects.release_due()
            release.set()
            return released, time.monotonic() - started

        _, (released, took) = run_in_threads([hold, release_due])  # type: ignore[misc]
        self.assertEqual(released, 0)
        self.assertLess(took, 0.5)
