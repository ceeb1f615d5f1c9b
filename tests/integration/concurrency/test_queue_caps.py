"""Queue caps: at most max_concurrency jobs of a capped queue are claimed at
once, over every claimer; other queues claim as before."""

from __future__ import annotations

import importlib
import threading
import time
import unittest
from unittest import mock

from django.db import connection, transaction
from django.test import TransactionTestCase, override_settings
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.models import ClaimedExecution, Process, QueueCap, ReadyExecution
from robust_queue.processes import selector
from robust_queue.processes.config import WorkerConfig
from robust_queue.processes.selector import QueueSelector
from robust_queue.processes.worker import Worker
from robust_queue.running.performing import perform
from testproject import tasks
from tests.connections import LOCK_POLL, waiting_on_locks
from tests.helpers import make_process, run_in_threads, wait_until

CAP = 5
JOBS = 120
CLAIMERS = 6


def _enqueue(count: int, queue_name: str = "mail") -> None:
    robust_queue.enqueue_all(
        [(tasks.add.using(queue_name=queue_name), (i, i), {}) for i in range(count)]
    )


def _claim(limit: int, process: Process, queue_name: str = "mail", cap: int | None = CAP) -> list:  # type: ignore[type-arg]
    return ReadyExecution.objects.claim(
        limit,
        process_id=process.pk,
        worker_id=process.name,
        queue_name=queue_name,
        max_concurrency=cap,
    )


def _running(queue_name: str = "mail") -> int:
    return ClaimedExecution.objects.filter(job__queue_name=queue_name).count()


class QueueCapTests(TransactionTestCase):
    def setUp(self) -> None:
        self.process = make_process()

    def test_a_claim_takes_only_the_room_left(self) -> None:
        """With 3 of 5 running, a claim of 10 takes 2; a full queue gives 0
        until a job finishes."""
        _enqueue(10)
        self.assertEqual(len(_claim(3, self.process)), 3)
        self.assertEqual(len(_claim(10, self.process)), 2)
        self.assertEqual(_claim(10, self.process), [])
        perform(ClaimedExecution.objects.select_related("job").first())  # type: ignore[arg-type]
        self.assertEqual(len(_claim(10, self.process)), 1)
        self.assertEqual(_running(), CAP)

    def test_claims_of_every_process_count(self) -> None:
        """The cap is over all workers, not per worker."""
        _enqueue(10)
        other = make_process("other-worker")
        self.assertEqual(len(_claim(4, other)), 4)
        self.assertEqual(len(_claim(10, self.process)), 1)

    def test_other_queues_are_not_capped(self) -> None:
        _enqueue(10)
        _enqueue(10, "default")
        self.assertEqual(len(_claim(10, self.process)), CAP)
        self.assertEqual(len(_claim(10, self.process, "default", None)), 10)

    def test_an_uncapped_claim_never_reads_the_cap_table(self) -> None:
        """The plain claim is the statement it was: no lock, no count."""
        _enqueue(3, "default")
        with CaptureQueriesContext(connection) as queries:
            self.assertEqual(len(_claim(10, self.process, "default", None)), 3)
        sql = " ".join(query["sql"] for query in queries.captured_queries)
        self.assertNotIn("queue_cap", sql)
        self.assertNotIn("COUNT", sql.upper())
        self.assertFalse(QueueCap.objects.exists())

    def test_an_empty_capped_queue_takes_no_lock(self) -> None:
        self.assertEqual(_claim(10, self.process), [])
        self.assertFalse(QueueCap.objects.exists())

    def test_concurrent_claimers_never_exceed_the_cap(self) -> None:
        """Claimers on their own connections, finishing what they take and
        claiming again, never have more than CAP jobs claimed at once; a
        sampler on another connection watches; every job runs once. Every
        claimer's first claim is made before any of them finishes a job (a
        barrier), so the cap is reached as a fact, not by luck of timing."""
        _enqueue(JOBS)
        processes = [make_process(f"worker-{i}") for i in range(CLAIMERS)]
        done = threading.Event()
        first_claims = threading.Barrier(CLAIMERS, timeout=60)
        seen: list[int] = []

        def sample() -> int:
            while not done.is_set():
                seen.append(_running())
            return max(seen)

        def claim_and_run(process: Process) -> list[int]:
            taken: list[int] = []
            first = True
            while ReadyExecution.objects.filter(queue_name="mail").exists():
                batch = _claim(3, process)
                seen.append(_running())
                if first:
                    first_claims.wait()
                    first = False
                time.sleep(0.002)
                for row in batch:
                    taken.append(row.job_id)
                    perform(row)
            return taken

        def claimers() -> list[object]:
            try:
                return run_in_threads([lambda p=p: claim_and_run(p) for p in processes])
            finally:
                done.set()

        sampled, results = run_in_threads([sample, claimers])
        taken = [job_id for batch in results for job_id in batch]  # type: ignore[attr-defined]
        self.assertEqual(sorted(taken), sorted(set(taken)))
        self.assertEqual(len(taken), JOBS)
        self.assertLessEqual(max(seen), CAP)
        self.assertEqual(max(seen), CAP, "the cap was reached: claimers overlapped")


@unittest.skipIf(connection.vendor == "sqlite", "SQLite lets one writer in at a time")
class QueueCapLockTests(TransactionTestCase):
    def setUp(self) -> None:
        self.process = make_process()

    def test_a_held_cap_lock_does_not_slow_other_queues(self) -> None:
        """While a claim of ``mail`` holds its lock row, ``default`` is
        claimed at once, and ``mail``'s next claim waits for the commit:
        the lock is let go only once ``default``'s claim has returned and
        ``mail``'s waits on it (facts, not durations)."""
        _enqueue(3)
        _enqueue(3, "default")
        QueueCap.objects.create(queue_name="mail")
        locked, release = threading.Event(), threading.Event()
        ended: dict[str, float] = {}

        def hold() -> None:
            with transaction.atomic():
                QueueCap.objects.lock("mail")
                locked.set()
                release.wait(60)

        def claim_default() -> int:
            locked.wait(10)
            count = len(_claim(10, self.process, "default", None))
            ended["default"] = time.monotonic()
            return count

        def claim_mail() -> int:
            locked.wait(10)
            count = len(_claim(10, self.process))
            ended["mail"] = time.monotonic()
            return count

        def let_go() -> None:
            locked.wait(10)
            wait_until(
                lambda: "default" in ended and waiting_on_locks(), timeout=30, interval=LOCK_POLL
            )
            ended["released"] = time.monotonic()
            release.set()

        _, default, mail, _ = run_in_threads([hold, claim_default, claim_mail, let_go])
        self.assertEqual((default, mail), (3, 3))
        self.assertLess(ended["default"], ended["released"])
        self.assertGreater(ended["mail"], ended["released"])


QUEUES = {"queues": {"mail": {"max_concurrency": 2}, "sms": {"max_concurrency": 1}}}


class WorkerQueueCapTests(TransactionTestCase):
    """A worker's claim round respects each capped queue it selects."""

    def _worker(self, *queues: str) -> Worker:
        config = WorkerConfig(queues=queues, threads=10)
        worker = Worker(config, shutdown_timeout=1, using="default", heartbeat_interval=60)
        worker.process = make_process()
        return worker

    def _claimed_queues(self, worker: Worker) -> list[str]:
        return sorted(row.job.queue_name for row in worker._claim(10))

    @override_settings(ROBUST_QUEUE=QUEUES)
    def test_star_caps_each_capped_queue_and_fills_up_with_the_rest(self) -> None:
        for queue_name in ("mail", "sms", "default"):
            _enqueue(4, queue_name)
        worker = self._worker("*")
        self.assertEqual(self._claimed_queues(worker), ["default"] * 4 + ["mail"] * 2 + ["sms"])
        self.assertEqual(self._claimed_queues(worker), [])

    @override_settings(ROBUST_QUEUE=QUEUES)
    def test_named_and_prefix_selectors_are_capped_per_queue(self) -> None:
        for queue_name in ("mail", "sms", "reports"):
            _enqueue(4, queue_name)
        worker = self._worker("sm*", "mail", "reports")
        self.assertEqual(self._claimed_queues(worker), ["mail"] * 2 + ["reports"] * 4 + ["sms"])

    @override_settings(ROBUST_QUEUE=QUEUES)
    def test_two_workers_share_one_cap(self) -> None:
        _enqueue(4)
        first, second = self._worker("*"), self._worker("mail")
        self.assertEqual(len(first._claim(1)), 1)
        self.assertEqual(self._claimed_queues(second), ["mail"])
        self.assertEqual(self._claimed_queues(first), [])


class QueueCapNameTests(TransactionTestCase):
    def test_look_alike_queue_names_have_caps_of_their_own(self) -> None:
        """``mail`` and ``MAIL`` are two queues (byte-exact on MySQL too)."""
        process = make_process()
        _enqueue(3)
        _enqueue(3, "MAIL")
        self.assertEqual(len(_claim(10, process, cap=1)), 1)
        self.assertEqual(len(_claim(10, process, "MAIL", cap=2)), 2)
        self.assertEqual(
            sorted(QueueCap.objects.values_list("queue_name", flat=True)), ["MAIL", "mail"]
        )

    def test_the_cap_table_compares_names_byte_exact_on_mysql(self) -> None:
        if connection.vendor != "mysql":
            self.skipTest("only MySQL/MariaDB collations ignore case")
        collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                "DATABASE() AND TABLE_NAME = 'robust_queue_queue_cap' AND COLUMN_NAME = 'queue_name'"
            )
            self.assertEqual(cursor.fetchone(), (collation.binary_collation(connection),))


class CappedSelectorTests(TransactionTestCase):
    @override_settings(ROBUST_QUEUE={"queues": {"mail": {"max_concurrency": 2}}})
    def test_an_empty_capped_queue_is_left_out_until_the_next_read(self) -> None:
        """No claim probes an empty capped queue each round; its first job
        is planned at the next read (CACHE_SECONDS)."""
        chooser = QueueSelector(("*",), using="default")
        self.assertEqual(chooser.plan(), [(None, ("mail",))])
        _enqueue(1)
        self.assertEqual(chooser.plan(), [(None, ("mail",))], "cached")
        with mock.patch.object(selector, "CACHE_SECONDS", 0):
            self.assertEqual(chooser.plan(), [("mail", ()), (None, ("mail",))])
        self.assertEqual(chooser.caps, {"mail": 2})
