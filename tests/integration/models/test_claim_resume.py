"""A worker's claim starts after its last one (``sql/claim_position.py``)
and still takes higher priorities first and never leaves a job behind.

Workers claim with ``resume=True``: past the (priority, job id) their last
claim took, so that the dead index entries of the jobs claimed before it
(which an open transaction keeps from vacuum) are not walked again. SQLite
frees index entries at once and claims from the head; the behaviour the
tests check holds on every database.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

from django.db import connection, connections
from django.test import TransactionTestCase
from django.utils import timezone

import robust_queue
from robust_queue.models import ClaimedExecution, ReadyExecution, ScheduledExecution
from robust_queue.models.sql import dialect_for
from robust_queue.models.sql.claim_position import RESCAN_EVERY
from testproject import tasks
from tests.helpers import run_in_threads, wait_until
from tests.integration.operations.test_table_health import open_transaction


def claim(limit: int = 1, **options: Any) -> list[str]:
    """A worker's claim (resumed): the result ids it took, in claim order."""
    rows = ReadyExecution.objects.claim(
        limit, process_id=None, worker_id="w", resume=True, **options
    )
    return [row.job.result_id for row in rows]


def resumes() -> bool:
    return dialect_for("default").resumes_claims


class ResumedClaimTests(TransactionTestCase):
    def setUp(self) -> None:
        # Positions are the connection's: none left by an earlier test.
        dialect_for("default").claim_positions.forget()

    def _older_job_made_ready(self) -> str:
        """A job enqueued (scheduled) before the others and made ready
        now: its id is older than theirs."""
        result = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(0, 0)
        return result.id

    def _dispatch(self) -> None:
        ScheduledExecution.objects.update(scheduled_at=timezone.now() - timedelta(seconds=1))
        self.assertEqual(ScheduledExecution.objects.dispatch_next_batch(10), 1)

    def test_a_higher_priority_enqueued_after_a_claim_is_taken_first(self) -> None:
        first, later = tasks.add.enqueue(1, 1), tasks.add.enqueue(1, 2)
        self.assertEqual(claim(), [first.id])
        high = tasks.add.using(priority=10).enqueue(1, 3)
        newest = tasks.add.enqueue(1, 4)
        low = tasks.add.using(priority=-10).enqueue(1, 5)
        self.assertEqual(claim(10), [high.id, later.id, newest.id, low.id])

    def test_a_finish_that_claims_next_resumes_in_the_same_order(self) -> None:
        """Finish-and-claim-next with ``resume``, as a worker thread does:
        MariaDB's reads of the higher range (backward, then forward only
        if it found a row) run behind the finish's fence as well."""
        first, later = tasks.add.enqueue(1, 1), tasks.add.enqueue(1, 2)
        [row] = ReadyExecution.objects.claim(1, process_id=None, worker_id="w", resume=True)
        self.assertEqual(row.job.result_id, first.id)
        high = tasks.add.using(priority=10).enqueue(1, 3)
        low = tasks.add.using(priority=-10).enqueue(1, 5)
        dialect = dialect_for("default")
        taken: list[str] = []
        for _ in range(3):
            then = (1, dialect.claim_filter(None, (), ()), None, "w")
            finished, claimed = dialect.finish_and_claim(
                row.pk, row.job_id, timezone.now(), 2, then, timezone.now, resume=True
            )
            self.assertIs(finished, True)
            [(claim_pk, job)] = claimed.rows
            taken.append(job[claimed.columns.index("result_id")])
            row = ClaimedExecution.objects.get(pk=claim_pk)
        self.assertEqual(taken, [high.id, later.id, low.id])

    def test_a_named_queues_claim_resumes_in_the_same_order(self) -> None:
        first, later = tasks.add.enqueue(1, 1), tasks.add.enqueue(1, 2)
        queue = first.task.queue_name
        self.assertEqual(claim(queue_name=queue), [first.id])
        high = tasks.add.using(priority=10).enqueue(1, 3)
        low = tasks.add.using(priority=-10).enqueue(1, 5)
        self.assertEqual(claim(10, queue_name=queue), [high.id, later.id, low.id])

    def test_one_claim_returns_its_jobs_in_priority_order(self) -> None:
        self.assertEqual(claim(), [])
        tasks.add.enqueue(0, 0)
        claim()
        results = [tasks.add.using(priority=p).enqueue(p, 0) for p in (0, 5, -5, 5, 0)]
        ids = [r.id for r in results]
        self.assertEqual(claim(10), [ids[1], ids[3], ids[0], ids[4], ids[2]])

    def test_an_older_job_made_ready_after_a_claim_is_taken_when_newer_ones_run_out(
        self,
    ) -> None:
        older = self._older_job_made_ready()
        first, second = tasks.add.enqueue(1, 1), tasks.add.enqueue(1, 2)
        self.assertEqual(claim(), [first.id])
        scanned = time.monotonic()
        self._dispatch()
        taken = claim()
        if resumes() and time.monotonic() - scanned < RESCAN_EVERY:
            # Past the position first: the newer job of the same priority.
            self.assertEqual(taken, [second.id])
        elif not resumes():
            # From the head of the index, as a worker always claimed there:
            # the older job first (SQLite, which frees index entries at once).
            self.assertEqual(taken, [older])
        taken += claim()
        # Nothing past the position any more: the claim scans from the head.
        self.assertEqual(sorted(taken), sorted([second.id, older]))
        self.assertEqual(claim(), [])
        self.assertFalse(ReadyExecution.objects.exists())

    def test_an_older_job_is_taken_within_the_rescan_interval_on_a_busy_queue(self) -> None:
        """Newer jobs keep coming, so a bounded claim always finds one:
        the older job is still claimed, by the scan from the head that
        comes RESCAN_EVERY after the last one."""
        older = self._older_job_made_ready()
        tasks.add.enqueue(1, 1)
        claim()
        self._dispatch()
        began = time.monotonic()
        taken: list[str] = []

        def older_claimed() -> bool:
            tasks.add.enqueue(1, 2)
            taken.extend(claim())
            return older in taken

        wait_until(older_claimed, timeout=RESCAN_EVERY + 10)
        self.assertLess(time.monotonic() - began, RESCAN_EVERY + 5)
        self.assertEqual(len(taken), len(set(taken)))

    def test_a_claim_made_when_nothing_follows_its_position_finds_every_ready_job(self) -> None:
        tasks.add.enqueue(1, 1)
        claim()
        older = self._older_job_made_ready()
        self._dispatch()
        # The last claim took a job: the bounded one finds nothing, so the
        # claim scans again from the head at once.
        self.assertEqual(claim(), [older])

    def test_concurrent_resumed_claims_take_every_job_once(self) -> None:
        if connection.vendor == "sqlite":
            self.skipTest("SQLite has no row locks: one claim at a time")
        results = [tasks.add.using(priority=i % 3).enqueue(i, 0) for i in range(60)]
        taken: list[list[str]] = [[] for _ in range(3)]

        def worker(n: int) -> None:
            try:
                dialect_for("default").claim_positions.forget()
                idle = 0
                while idle < 3:
                    got = claim(2)
                    taken[n].extend(got)
                    idle = 0 if got else idle + 1
            finally:
                connections.close_all()

        run_in_threads([lambda n=n: worker(n) for n in range(3)])
        everything = [result_id for part in taken for result_id in part]
        self.assertEqual(sorted(everything), sorted(r.id for r in results))
        self.assertEqual(len(everything), len(set(everything)))
        self.assertEqual(ClaimedExecution.objects.count(), 60)


# Jobs claimed while the other transaction is open.
JOBS = 5000


class ResumedClaimCostTests(TransactionTestCase):
    """The point of resuming: with a transaction open on another
    connection, the jobs claimed since it began leave index entries that
    no vacuum or purge may remove; a claim from the head of the index
    reads them all, a resumed claim does not."""

    def test_a_resumed_claim_reads_past_the_dead_entries(self) -> None:
        if connection.vendor == "sqlite":
            self.skipTest("SQLite frees index entries at once: nothing to walk")
        dialect = dialect_for("default")
        dialect.claim_positions.forget()
        queue = dialect.claim_filter(None, [], [])
        with open_transaction():
            robust_queue.enqueue_all([(tasks.add, (i, 1), {}) for i in range(JOBS)])
            while claim(500):
                pass
            tasks.add.enqueue(2, 2)
            # Where the last claim ended (a worker's position).
            last = ClaimedExecution.objects.order_by("-job_id").values_list("job_id", flat=True)[0]
            head = self._pages([dialect.lock_ready(1, queue)])
            resumed = self._pages(dialect.claim_reads(1, queue, (0, last)))
        # Pages: the head's grow with the jobs claimed since the
        # transaction began (PostgreSQL ~74 here, MariaDB ~10,000: a look at
        # the row of every entry InnoDB skips), the resumed
        # claim's do not (a descent of the index for each of its three
        # ranges; MariaDB: and the backward read of the first).
        self.assertGreater(head, 3 * resumed, (head, resumed))

    def _pages(self, statements: list[tuple[str, list[Any]]]) -> int:
        """Index and table pages the claim's reads touch, run as the claim
        runs them and rolled back (PostgreSQL: EXPLAIN's shared buffers;
        MariaDB: ANALYZE's pages_accessed, the backward read's SET measured
        by its SELECT)."""
        pages = 0
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            for sql, params in statements:
                if connection.vendor == "postgresql":
                    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", params)
                    (plan,) = cursor.fetchone()
                    top = plan[0]["Plan"]
                    pages += int(top.get("Shared Hit Blocks", 0))
                    pages += int(top.get("Shared Read Blocks", 0))
                    continue
                measured = sql
                if sql.startswith("SET "):
                    measured = sql[sql.index("(") + 1 : -1]
                cursor.execute(f"ANALYZE FORMAT=JSON {measured}", params)
                (plan,) = cursor.fetchone()
                pages += sum(_pages_accessed(json.loads(plan)))
                if measured is not sql:
                    cursor.execute(sql, params)
            cursor.execute("ROLLBACK")
        return pages


def _pages_accessed(plan: Any) -> list[int]:
    """Every ``pages_accessed`` of a MariaDB ANALYZE FORMAT=JSON plan."""
    if isinstance(plan, dict):
        found = [int(plan["pages_accessed"])] if "pages_accessed" in plan else []
        return found + [n for value in plan.values() for n in _pages_accessed(value)]
    if isinstance(plan, list):
        return [n for value in plan for n in _pages_accessed(value)]
    return []
