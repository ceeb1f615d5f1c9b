"""Rate limits: at most ``to`` jobs of a key are admitted per window; the
others wait (blocked on ``rate:<key>``) and go on in priority order as
windows open; nothing is failed or lost."""

from __future__ import annotations

import datetime as dt
import importlib

from django.db import connection
from django.db.models import F
from django.test import TestCase
from django.utils import timezone

import robust_queue
from robust_queue.compat import TaskResultStatus
from robust_queue.exceptions import EnqueueError, JobCancelledError
from robust_queue.models import BlockedExecution, Job, RateLimit, ReadyExecution, ScheduledExecution
from robust_queue.models.clock import database_now
from robust_queue.running.performing import perform
from robust_queue.running.rate_gate import may_start
from testproject import coordination_tasks as co
from tests.helpers import cancel_requested_before_the_take, claim, work_off

CANCELLED = f"{JobCancelledError.__module__}.{JobCancelledError.__qualname__}"

KEY_A = "testproject.coordination_tasks.rated/a"


def open_next_window(key: str) -> None:
    """As if the key's window had ended: the next one is empty."""
    RateLimit.objects.filter(key=key).update(
        window_start=F("window_start") - dt.timedelta(days=1),
        window_end=F("window_end") - dt.timedelta(days=1),
        next_release=database_now("default") - dt.timedelta(seconds=1),
    )


def ready_ids() -> set[str]:
    return set(ReadyExecution.objects.values_list("job__result_id", flat=True))


def waiting_ids(key: str = KEY_A) -> list[str]:
    rows = BlockedExecution.objects.filter(concurrency_key=f"rate:{key}")
    return list(rows.order_by("-priority", "job_id").values_list("job__result_id", flat=True))


class RateLimitTests(TestCase):
    def test_at_most_to_jobs_of_a_key_are_admitted_per_window(self) -> None:
        ids = [co.rated.enqueue("a", n).id for n in range(5)]
        self.assertEqual(ready_ids(), set(ids[:2]))
        self.assertEqual(waiting_ids(), ids[2:])
        row = RateLimit.objects.get(key=KEY_A)
        self.assertEqual(row.count, 2)
        self.assertEqual(row.next_release, row.window_end)
        self.assertEqual(co.rated.get_result(ids[4]).status, TaskResultStatus.READY)

    def test_keys_have_windows_of_their_own(self) -> None:
        robust_queue.enqueue_all([(co.rated, ("a", n), {}) for n in range(3)])
        b = [co.rated.enqueue("b", n).id for n in range(2)]
        self.assertTrue(set(b) <= ready_ids())
        self.assertEqual(len(waiting_ids()), 1)

    def test_bulk_enqueue_admits_in_priority_order(self) -> None:
        low = co.rated.using(priority=-5)
        high = co.rated.using(priority=50)
        results = robust_queue.enqueue_all(
            [(low, ("a", 1), {}), (high, ("a", 2), {}), (low, ("a", 3), {}), (high, ("a", 4), {})]
        )
        self.assertEqual(ready_ids(), {results[1].id, results[3].id})

    def test_waiting_jobs_go_on_in_priority_order_as_windows_open(self) -> None:
        for n in range(2):
            co.rated.enqueue("a", n)
        low = co.rated.using(priority=-10).enqueue("a", 2).id
        high = co.rated.using(priority=10).enqueue("a", 3).id
        mid = co.rated.enqueue("a", 4).id
        self.assertEqual(waiting_ids(), [high, mid, low])
        open_next_window(KEY_A)
        self.assertEqual(RateLimit.objects.release_due(), 2)
        self.assertTrue({high, mid} <= ready_ids())
        self.assertEqual(waiting_ids(), [low])
        self.assertEqual(RateLimit.objects.release_due(), 0, "the new window is full")
        open_next_window(KEY_A)
        self.assertEqual(RateLimit.objects.release_due(), 1)
        self.assertIsNone(RateLimit.objects.get(key=KEY_A).next_release)

    def test_a_newcomer_joins_the_waiting_line_even_when_a_window_opens(self) -> None:
        """Between a window opening and the dispatcher's release, a new job
        does not jump the line; a higher-priority one goes first."""
        for n in range(3):
            co.rated.enqueue("a", n)
        waiting = waiting_ids()
        open_next_window(KEY_A)
        urgent = co.rated.using(priority=90).enqueue("a", 9).id
        self.assertNotIn(urgent, ready_ids())
        RateLimit.objects.release_due()
        self.assertTrue({urgent, *waiting} <= ready_ids())

    def test_every_job_runs_once_over_the_windows(self) -> None:
        ids = [co.rated.enqueue("a", n).id for n in range(5)]
        ran = work_off()
        while waiting_ids():
            open_next_window(KEY_A)
            RateLimit.objects.release_due()
            ran += work_off()
        self.assertEqual(ran, 5)
        self.assertEqual({co.rated.get_result(i).return_value for i in ids}, set(range(5)))

    def test_a_due_scheduled_job_is_counted_when_it_is_dispatched(self) -> None:
        later = timezone.now() + dt.timedelta(hours=1)
        ids = [co.rated.using(run_after=later).enqueue("a", n).id for n in range(3)]
        self.assertEqual(ScheduledExecution.objects.count(), 3)
        self.assertFalse(RateLimit.objects.exists(), "not counted while scheduled")
        ScheduledExecution.objects.update(scheduled_at=timezone.now() - dt.timedelta(seconds=1))
        ScheduledExecution.objects.dispatch_next_batch(10)
        self.assertEqual(len(ready_ids()), 2)
        self.assertEqual(len(waiting_ids()), 1)
        self.assertEqual(set(ready_ids()) | set(waiting_ids()), set(ids))

    def test_concurrency_upkeep_leaves_rate_waits_alone(self) -> None:
        for n in range(3):
            co.rated.enqueue("a", n)
        self.assertEqual(BlockedExecution.objects.release_all_with_room(), 0)
        self.assertEqual(len(waiting_ids()), 1)

    def test_run_now_takes_a_waiting_job_past_its_rate_limit(self) -> None:
        for n in range(3):
            co.rated.enqueue("a", n)
        (job_id,) = waiting_ids()
        BlockedExecution.objects.filter(job__result_id=job_id).dispatch_now()
        self.assertIn(job_id, ready_ids())
        self.assertEqual(Job.objects.get(result_id=job_id).rate_key, "")

    def test_with_a_concurrency_limit_the_rate_comes_first(self) -> None:
        """1 an hour and 1 at a time: the second job waits for the rate;
        admitted in the next window, it waits for the first to finish."""
        first = co.rated_and_limited.enqueue(1).id
        second = co.rated_and_limited.enqueue(2).id
        self.assertEqual(ready_ids(), {first})
        open_next_window("testproject.coordination_tasks.rated_and_limited/")
        self.assertEqual(RateLimit.objects.release_due(), 1)
        blocked = BlockedExecution.objects.get(job__result_id=second)
        self.assertEqual(
            blocked.concurrency_key,
            "testproject.coordination_tasks.rated_and_limited/rated-and-limited",
        )
        (claimed,) = claim()
        perform(claimed)
        self.assertEqual(ready_ids(), {second})

    def test_a_key_callable_that_raises_writes_nothing(self) -> None:
        with self.assertRaisesMessage(EnqueueError, "rate limit key of task"):
            co.rated_bad_key.enqueue(0)
        self.assertFalse(Job.objects.exists())
        self.assertFalse(RateLimit.objects.exists())

    def test_plain_jobs_never_touch_the_rate_table(self) -> None:
        co.tagged.enqueue(1)
        work_off()
        self.assertFalse(RateLimit.objects.exists())
        self.assertEqual(Job.objects.get().rate_key, "")

    def test_idle_windows_are_cleared(self) -> None:
        co.rated.enqueue("a")
        work_off()
        open_next_window(KEY_A)
        RateLimit.objects.release_due()
        self.assertEqual(RateLimit.objects.clear_idle_in_batches(), 1)
        self.assertFalse(RateLimit.objects.exists())

    def test_look_alike_keys_have_windows_of_their_own(self) -> None:
        """Byte-exact on MySQL/MariaDB too: 'A' is not 'a'."""
        for account in ("a", "A", "a", "A"):
            co.rated.enqueue(account)
        self.assertEqual(ReadyExecution.objects.count(), 4)
        self.assertEqual(RateLimit.objects.count(), 2)
        if connection.vendor != "mysql":
            return
        collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")
        with connection.cursor() as cursor:
            for table, column in (
                ("robust_queue_job", "rate_key"),
                ("robust_queue_rate_limit", "key"),
            ):
                cursor.execute(
                    "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                    "DATABASE() AND TABLE_NAME = %s AND COLUMN_NAME = %s",
                    [table, column],
                )
                self.assertEqual(cursor.fetchone(), (collation.binary_collation(connection),))


def age_window(key: str) -> None:
    """As if the key's jobs had been admitted a day ago and not started."""
    RateLimit.objects.filter(key=key).update(
        window_start=F("window_start") - dt.timedelta(days=1),
        window_end=F("window_end") - dt.timedelta(days=1),
    )
    Job.objects.filter(rate_key=key).update(run_after=F("run_after") - dt.timedelta(days=1))


class RateLimitStartTests(TestCase):
    """Every start counts in the window it happens in (rate_gate.py)."""

    def test_a_job_started_in_its_window_costs_no_count(self) -> None:
        co.rated.enqueue("a")
        (claimed,) = claim()
        perform(claimed)
        self.assertEqual(RateLimit.objects.get().count, 1)
        self.assertIsNotNone(Job.objects.get().finished_at)

    def test_a_job_started_in_a_later_window_counts_again_there(self) -> None:
        co.rated.enqueue("a")
        age_window(KEY_A)
        (claimed,) = claim()
        perform(claimed)
        self.assertEqual(RateLimit.objects.get().count, 1, "counted in the new window")
        self.assertIsNotNone(Job.objects.get().finished_at)

    def test_late_jobs_go_back_in_line_when_the_new_window_is_full(self) -> None:
        late = {co.rated.enqueue("a", n).id for n in range(2)}
        age_window(KEY_A)
        fresh = {co.rated.enqueue("a", n).id for n in (2, 3)}
        self.assertEqual(RateLimit.objects.get().count, 2)
        for claimed in sorted(claim(), key=lambda row: row.job.result_id in late):
            perform(claimed)
        finished = set(
            Job.objects.filter(finished_at__isnull=False).values_list("result_id", flat=True)
        )
        self.assertEqual(finished, fresh)
        self.assertEqual(set(waiting_ids()), late)
        self.assertEqual(
            set(Job.objects.filter(result_id__in=late).values_list("snoozes", flat=True)), {1}
        )
        row = RateLimit.objects.get()
        self.assertEqual((row.count, row.next_release), (2, row.window_end))

    def test_a_late_job_asked_to_cancel_fails_instead_of_waiting_in_line(self) -> None:
        """Its cancel request comes as the gate puts it back in line: it is
        failed as cancelled, not left waiting for the next window."""
        co.rated.enqueue("a")
        age_window(KEY_A)
        RateLimit.objects.update(next_release=database_now("default") + dt.timedelta(hours=1))
        (claimed,) = claim()
        with cancel_requested_before_the_take(claimed) as fired:
            self.assertFalse(may_start(claimed))
        self.assertEqual(len(fired), 1)
        job = Job.objects.get()
        self.assertTrue(hasattr(job, "failed_execution"))
        self.assertEqual(job.errors[-1]["exception_class_path"], CANCELLED)
        self.assertEqual(waiting_ids(), [])
        self.assertEqual(job.snoozes, 0)

    def test_a_late_job_joins_a_waiting_line_even_with_room(self) -> None:
        for n in range(3):
            co.rated.enqueue("a", n)
        age_window(KEY_A)
        RateLimit.objects.update(next_release=database_now("default") + dt.timedelta(hours=1))
        for claimed in claim():
            perform(claimed)
        self.assertEqual(len(waiting_ids()), 3)
        self.assertFalse(Job.objects.filter(finished_at__isnull=False).exists())
