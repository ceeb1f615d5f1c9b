"""Fair polling: under a flood on one queue, a worker with a rotating
``order`` still starts the other queues' jobs; a strict one does not."""

from __future__ import annotations

from django.test import TransactionTestCase

import robust_queue
from robust_queue.processes.config import WorkerConfig
from robust_queue.processes.worker import Worker
from testproject import tasks
from tests.helpers import make_process

FLOOD = 60
OTHERS = 3
THREADS = 2


def _enqueue(count: int, queue_name: str) -> None:
    robust_queue.enqueue_all(
        [(tasks.add.using(queue_name=queue_name), (i, i), {}) for i in range(count)]
    )


class FairPollingTests(TransactionTestCase):
    def setUp(self) -> None:
        # The flood lands first: by priority and id it comes first too.
        _enqueue(FLOOD, "flood")
        _enqueue(OTHERS, "other")

    def _worker(self, *queues: str, **options: object) -> Worker:
        config = WorkerConfig(queues=queues, threads=THREADS, **options)  # type: ignore[arg-type]
        worker = Worker(config, shutdown_timeout=1, using="default", heartbeat_interval=60)
        worker.process = make_process()
        return worker

    def _rounds_until_others_start(self, worker: Worker, rounds: int) -> int | None:
        """Claim rounds (THREADS jobs each, as a busy worker would) until
        every job of ``other`` is claimed; None if they never all are."""
        started = 0
        for number in range(1, rounds + 1):
            claimed = worker._claim(THREADS)
            started += sum(row.job.queue_name == "other" for row in claimed)
            if started == OTHERS:
                return number
        return None

    def test_strict_order_starves_the_second_queue(self) -> None:
        """The baseline: ``flood`` first every round, ``other`` waits."""
        worker = self._worker("flood", "other")
        self.assertIsNone(self._rounds_until_others_start(worker, FLOOD // THREADS - 1))

    def test_round_robin_starts_the_other_queue_within_bounded_rounds(self) -> None:
        """Two queues: every second round starts at ``other``, which gets
        both threads; 3 jobs take 2 of its rounds, so 4 rounds at most."""
        worker = self._worker("flood", "other", order="round_robin")
        self.assertLessEqual(self._rounds_until_others_start(worker, 10) or 99, 4)

    def test_star_alone_in_strict_order_starves_too(self) -> None:
        strict = self._worker("*")
        self.assertIsNone(self._rounds_until_others_start(strict, FLOOD // THREADS - 1))

    def test_star_with_round_robin_expands_the_names(self) -> None:
        worker = self._worker("*", order="round_robin")
        self.assertLessEqual(self._rounds_until_others_start(worker, 10) or 99, 4)

    def test_weighted_starts_each_queue_in_proportion(self) -> None:
        """3:1 for flood: one round in four starts at ``other``."""
        _enqueue(FLOOD, "other")
        worker = self._worker("flood", "other", order="weighted", weights={"flood": 3})
        firsts = []
        for _ in range(16):
            claimed = worker._claim(1)
            firsts.append(claimed[0].job.queue_name)
        self.assertEqual(firsts.count("flood"), 12)
        self.assertEqual(firsts.count("other"), 4)
        self.assertEqual(firsts[:4], ["flood", "flood", "other", "flood"])

    def test_the_worker_reports_its_order(self) -> None:
        worker = self._worker("flood", "other", order="round_robin")
        self.assertEqual(worker.metadata["order"], "round_robin")
