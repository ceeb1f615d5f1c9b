"""Claims whose answer was lost (models/claims_in_doubt.py): the server
committed them, the client saw an error. Their jobs go back to ready once
the worker's loop asks, never to a thread; a claim that did not commit
leaves nothing to give back."""

from __future__ import annotations

import datetime as dt
from typing import Any
from unittest import mock, skipIf

from django.db import OperationalError, connection
from django.test import TestCase, TransactionTestCase

from robust_queue.models import (
    ClaimedExecution,
    Job,
    JobState,
    NextClaim,
    ReadyExecution,
    claims_in_doubt,
)
from robust_queue.models.sql import dialect_for
from testproject import tasks
from tests.connections import kill_session_of
from tests.helpers import answer_lost, make_process


def failing(method: str) -> Any:
    """Patch the dialect's ``method`` to raise before sending anything."""
    kind = type(dialect_for("default"))
    return mock.patch.object(
        kind, method, side_effect=OperationalError("connection refused"), autospec=True
    )


def forget_all(process_pk: int) -> None:
    """Drop the notes a test left (they live for the process)."""
    for stamp in claims_in_doubt.noted("default", process_pk):
        claims_in_doubt.forget("default", process_pk, stamp)


def state(result_id: str) -> JobState:
    return Job.objects.with_executions().get(result_id=result_id).state


class ClaimsInDoubtTests(TestCase):
    def setUp(self) -> None:
        self.process = make_process()
        self.claims = ClaimedExecution.objects.all()
        self.addCleanup(forget_all, self.process.pk)

    def claim(self, limit: int = 2) -> list[ClaimedExecution]:
        return ReadyExecution.objects.claim(limit, process_id=self.process.pk, worker_id="w")

    def lose_claim(self, limit: int = 1) -> None:
        """A claim of ``limit`` that commits and whose answer is lost."""
        with answer_lost("claim"), self.assertRaises(OperationalError):
            self.claim(limit)

    def test_a_claim_committed_without_an_answer_is_given_back(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(3)]
        self.lose_claim(2)
        self.assertEqual(self.claims.count(), 2, "the server committed the claim")
        self.assertEqual(len(claims_in_doubt.noted("default", self.process.pk)), 1)
        released = self.claims.release_in_doubt(self.process.pk)
        self.assertEqual(released, 2)
        self.assertFalse(self.claims.exists())
        self.assertEqual({state(r.id) for r in results}, {JobState.READY})
        self.assertEqual(claims_in_doubt.noted("default", self.process.pk), [])
        self.assertEqual(self.claims.release_in_doubt(self.process.pk), 0)

    def test_only_the_claim_in_doubt_is_given_back(self) -> None:
        kept = tasks.add.enqueue(0, 0)
        (running,) = self.claim(1)
        lost = tasks.add.enqueue(1, 1)
        self.lose_claim()
        self.assertEqual(self.claims.release_in_doubt(self.process.pk), 1)
        self.assertEqual(self.claims.get().pk, running.pk)
        self.assertEqual(state(kept.id), JobState.CLAIMED)
        self.assertEqual(state(lost.id), JobState.READY)

    def test_a_claim_that_failed_before_taking_its_stamp_notes_nothing(self) -> None:
        result = tasks.add.enqueue(1, 1)
        with failing("claim"), self.assertRaises(OperationalError):
            self.claim(1)
        self.assertEqual(claims_in_doubt.noted("default", self.process.pk), [])
        self.assertEqual(state(result.id), JobState.READY)

    def test_a_claim_that_did_not_commit_leaves_nothing(self) -> None:
        """Taken its stamp, then failed: noted, and the note costs one query."""
        result = tasks.add.enqueue(1, 1)
        kind = type(dialect_for("default"))

        def stamped_then_refused(self: Any, *args: Any) -> Any:
            args[-1]()
            raise OperationalError("connection refused")

        with (
            mock.patch.object(kind, "claim", stamped_then_refused),
            self.assertRaises(OperationalError),
        ):
            self.claim(1)
        self.assertEqual(len(claims_in_doubt.noted("default", self.process.pk)), 1)
        self.assertEqual(self.claims.release_in_doubt(self.process.pk), 0)
        self.assertEqual(claims_in_doubt.noted("default", self.process.pk), [])
        self.assertEqual(state(result.id), JobState.READY)

    def test_a_claim_without_a_process_is_not_noted(self) -> None:
        tasks.add.enqueue(1, 1)
        with answer_lost("claim"), self.assertRaises(OperationalError):
            ReadyExecution.objects.claim(1, process_id=None, worker_id="tool")
        self.assertEqual(claims_in_doubt.noted("default", self.process.pk), [])

    def test_the_next_claim_of_a_finish_is_given_back_and_the_finish_stands(self) -> None:
        done, following = tasks.add.enqueue(1, 1), tasks.add.enqueue(2, 2)
        (claimed,) = self.claim(1)
        then = NextClaim(None, (), None, self.process.pk, "w")
        with answer_lost("finish_and_claim"), self.assertRaises(OperationalError):
            claimed.finish(2, then)
        self.assertEqual(then.claimed, [], "no thread holds the next job")
        self.assertEqual(state(done.id), JobState.FINISHED)
        self.assertEqual(state(following.id), JobState.CLAIMED)
        self.assertEqual(self.claims.release_in_doubt(self.process.pk), 1)
        self.assertEqual(state(following.id), JobState.READY)
        self.assertEqual(state(done.id), JobState.FINISHED)

    def test_a_cancel_requested_meanwhile_fails_the_job_instead(self) -> None:
        result = tasks.add.enqueue(1, 1)
        self.lose_claim()
        self.claims.update(cancel_requested_at=Job.objects.get().enqueued_at)
        self.assertEqual(self.claims.release_in_doubt(self.process.pk), 1)
        self.assertEqual(state(result.id), JobState.FAILED)

    def test_stamps_of_one_process_never_repeat(self) -> None:
        stamps = []
        for _ in range(2000):
            with claims_in_doubt.claiming("default", None) as stamp:
                stamps.append(stamp())
        self.assertEqual(stamps, sorted(set(stamps)))

    def test_a_claim_the_process_holds_is_kept_though_its_stamp_repeats(self) -> None:
        """After the clock steps back a stamp may repeat: the worker passes
        the claims its threads hold, and those are never given back."""
        tasks.add.enqueue(1, 1)
        self.lose_claim()
        (held,) = self.claims.all()
        self.assertEqual(self.claims.release_in_doubt(self.process.pk, keep={held.pk}), 0)
        self.assertEqual(self.claims.get().pk, held.pk)


class StampTests(TestCase):
    def stamps(self, clock: list[dt.datetime]) -> list[dt.datetime]:
        readings = iter(clock)
        with mock.patch("django.utils.timezone.now", lambda: next(readings)):
            stamps = []
            for _ in clock:
                with claims_in_doubt.claiming("default", None) as stamp:
                    stamps.append(stamp())
        return stamps

    def test_claims_in_one_microsecond_get_distinct_stamps(self) -> None:
        now = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
        tick = dt.timedelta(microseconds=1)
        self.assertEqual(self.stamps([now, now, now]), [now, now + tick, now + 2 * tick])

    def test_a_clock_stepped_back_is_followed_at_once(self) -> None:
        """A stamp is the attempt's start too: after the clock steps back
        (NTP, a skewed host) it must not stay ahead of the clock."""
        now = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
        later = now + dt.timedelta(minutes=5)
        self.assertEqual(
            self.stamps([later, now, now + dt.timedelta(seconds=1)]),
            [later, now, now + dt.timedelta(seconds=1)],
        )


@skipIf(connection.vendor == "sqlite", "SQLite has no server session to kill")
class KilledClaimTests(TransactionTestCase):
    """The claim's own connection killed by the server mid-claim: before
    PostgreSQL's one statement, between MariaDB's INSERT of the claim and
    its COMMIT (sent together). Nothing is claimed, the note finds nothing, and the next
    claim, on a new connection, takes the job."""

    def test_a_claim_killed_mid_transaction_claims_nothing_and_the_next_one_does(self) -> None:
        process = make_process()
        self.addCleanup(forget_all, process.pk)
        result = tasks.add.enqueue(1, 1)
        table = ClaimedExecution._meta.db_table
        killed: list[str] = []

        def kill_before(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            # MariaDB: the text that inserts the claims and commits.
            last_step = sql.endswith("COMMIT") if connection.vendor == "mysql" else table in sql
            if last_step and not killed:
                killed.append(sql)
                kill_session_of(connection)
            return execute(sql, params, many, context)

        claims = ReadyExecution.objects
        with connection.execute_wrapper(kill_before), self.assertRaises(OperationalError):
            claims.claim(1, process_id=process.pk, worker_id="w")
        self.assertEqual(len(killed), 1)
        connection.close()  # as a worker's round does after a database error
        self.assertEqual(len(claims_in_doubt.noted("default", process.pk)), 1)
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertEqual(state(result.id), JobState.READY)
        mine = ClaimedExecution.objects.all()
        self.assertEqual(mine.release_in_doubt(process.pk), 0)
        self.assertEqual(claims_in_doubt.noted("default", process.pk), [])
        (claimed,) = claims.claim(1, process_id=process.pk, worker_id="w")
        self.assertEqual(claimed.job.result_id, result.id)
