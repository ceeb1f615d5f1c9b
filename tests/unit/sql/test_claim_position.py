"""When a worker's claim starts after its last one, and when it scans the
ready index from its head (``sql/claim_position.py``)."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.models.sql import claim_position, queue_filter
from robust_queue.models.sql.base import ClaimedRows
from robust_queue.models.sql.claim_position import ClaimPositions, bounded, last_position

from .support import NOW, dialect

QUEUE = ("queue_name = %s", ["mail"])
COLUMNS = ["id", "priority", "group_key"]


def took(*jobs: tuple[int, int]) -> ClaimedRows:
    """Claimed rows of (job id, priority), in claim order."""
    return ClaimedRows(COLUMNS, [(n, (job_id, p, None)) for n, (job_id, p) in enumerate(jobs)])


class ClaimPositionTests(SimpleTestCase):
    def setUp(self) -> None:
        self.positions = ClaimPositions()

    def test_the_first_claim_scans_from_the_head(self) -> None:
        self.assertIsNone(self.positions.start(QUEUE))

    def test_the_next_claim_starts_after_the_last_job_taken(self) -> None:
        self.positions.record(QUEUE, None, took((7, 5), (9, 0)))
        self.assertEqual(self.positions.start(QUEUE), (0, 9))
        self.assertIsNone(self.positions.start(("1 = 1", [])), "per claim filter")

    def test_a_claim_scans_from_the_head_again_after_the_interval(self) -> None:
        self.positions.record(QUEUE, None, took((9, 0)))
        self.positions._marks[claim_position._key(QUEUE)].scanned_at -= claim_position.RESCAN_EVERY
        self.assertIsNone(self.positions.start(QUEUE))

    def test_a_bounded_claim_that_took_nothing_rescans_only_after_one_that_took_jobs(
        self,
    ) -> None:
        self.positions.record(QUEUE, None, took((9, 0)))
        self.assertIs(self.positions.rescan(QUEUE, (0, 9)), True)
        self.positions.record(QUEUE, None, took())
        self.assertIs(self.positions.rescan(QUEUE, (0, 9)), False)
        self.assertEqual(self.positions.start(QUEUE), (0, 9), "kept while nothing is taken")

    def test_a_job_of_a_fair_group_leaves_no_position(self) -> None:
        rows = [(9, 0, "tenant-1")]
        self.assertIsNone(last_position(COLUMNS, rows))
        self.positions.record(QUEUE, None, ClaimedRows(COLUMNS, [(1, rows[0])]))
        self.assertIsNone(self.positions.start(QUEUE))

    def test_forget_drops_every_position(self) -> None:
        self.positions.record(QUEUE, None, took((9, 0)))
        self.positions.forget()
        self.assertIsNone(self.positions.start(QUEUE))

    def test_the_ranges_cover_the_claim_order_past_the_position(self) -> None:
        ranges = bounded("w = %s", ["x"], (3, 40), "same(%s, %s)")
        self.assertEqual(
            ranges,
            [
                ("w = %s AND priority > %s", ["x", 3]),
                ("w = %s AND same(%s, %s)", ["x", 3, 40]),
                ("w = %s AND priority < %s", ["x", 3]),
            ],
        )


class ResumedStatementTests(SimpleTestCase):
    """The resumed claim's statements: each range a locking read, as many
    parameters as placeholders, the same text whatever the position."""

    def test_postgresql_claims_three_locked_ranges_in_one_statement(self) -> None:
        pg, _ = dialect("postgresql")
        for queue in (queue_filter(None, ["a"]), queue_filter("mail", [])):
            with self.subTest(queue=queue[0]):
                sql, params = pg.claim_in_one(3, queue, 7, "w-1", NOW, (5, 40))
                self.assertEqual(sql.count("FOR UPDATE SKIP LOCKED"), 3)
                self.assertIn("AS range_0 UNION ALL SELECT * FROM (", sql)
                self.assertIn("priority = %s AND (fair_round, job_id) > (0, %s)", sql)
                self.assertEqual(sql.count("%s"), len(params))
                self.assertEqual(params[-3:], [7, NOW, "w-1"])
                again, _ = pg.claim_in_one(3, queue, 7, "w-1", NOW, (0, 99))
                self.assertEqual(again, sql)
        # A named queue's resumed ranges compare its name for equality.
        sql, params = pg.claim_in_one(3, queue_filter("mail", []), 7, "w-1", NOW, (5, 40))
        self.assertNotIn("queue_name >= %s", sql)
        self.assertEqual(params[:3], ["mail", 5, 3])

    def test_postgresqls_locking_read_resumes_with_a_row_comparison(self) -> None:
        pg, _ = dialect("postgresql")
        sql, params = pg.lock_ready(2, queue_filter(None, ["a"]), (5, 40))
        self.assertIn("priority = %s AND (fair_round, job_id) > (0, %s)", sql)
        self.assertNotIn("fair_round > 0 OR", sql)
        self.assertEqual(params, ["a", 5, 2, "a", 5, 40, 2, "a", 5, 2, 2])

    def test_the_finish_and_claim_resumes_behind_its_fence(self) -> None:
        pg, _ = dialect("postgresql")
        then = (1, queue_filter(None, []), 7, "w-1")
        sql, params = pg.finish_and_claim_in_one(11, NOW, {"v": 1}, then, NOW, (0, 9))
        self.assertEqual(sql.count("AND EXISTS (SELECT 1 FROM done)"), 3)
        self.assertEqual(sql.count("%s"), len(params))

    def test_mysqls_resumed_claim_reads_its_higher_range_backward_first(self) -> None:
        mysql, wrapper = dialect("mysql")
        # What a MariaDB >= 10.6 server answers (it is never asked here).
        wrapper.features.has_select_for_update = True
        wrapper.features.has_select_for_update_skip_locked = True
        queue = queue_filter(None, ["a"])
        [probe, lock] = mysql.claim_reads(2, queue, (5, 40))
        sql, params = probe
        # From the end of the range nearest the position, for one row.
        self.assertTrue(sql.startswith("SET @robust_queue_higher = (SELECT priority FROM "))
        self.assertIn("AND priority > %s ORDER BY priority ASC, fair_round DESC, job_id DESC", sql)
        self.assertEqual(params, ["a", 5])
        self.assertEqual(sql.count("%s"), len(params))
        # One locking read of the claim order past the position, the
        # higher priorities in it only if the backward read found one.
        sql, params = lock
        self.assertEqual(sql.count("FOR UPDATE SKIP LOCKED"), 1)
        self.assertNotIn("UNION", sql)
        self.assertIn(
            "(@robust_queue_higher IS NOT NULL AND priority > %s OR priority = %s AND "
            "(fair_round > 0 OR (fair_round = 0 AND job_id > %s)) OR priority < %s)",
            sql,
        )
        self.assertEqual(params, ["a", 5, 5, 40, 5, 2])
        self.assertEqual(sql.count("%s"), len(params))
        # From the head: one read, no probe.
        self.assertEqual(mysql.claim_reads(2, queue, None), [mysql.lock_ready(2, queue)])
