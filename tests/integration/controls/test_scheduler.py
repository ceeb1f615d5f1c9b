"""The scheduler: syncing definitions, one enqueue per slot, retention."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

from django.test import TestCase, TransactionTestCase, override_settings

from robust_queue.exceptions import ConfigurationError
from robust_queue.models import Job, RecurringExecution, RecurringTask
from robust_queue.processes.scheduler import Scheduler
from testproject import control_tasks  # noqa: F401 - declares the ticks
from tests.helpers import run_in_threads

# Slots of the test ticks: Jan 1 03:00 ("new-year") and Jul 1 04:30 ("july").
NEW_YEAR = datetime(2031, 1, 1, 3, 0, tzinfo=UTC)
JULY = datetime(2031, 7, 1, 4, 30, tzinfo=UTC)
STATIC_KEYS = {"tick-new-year", "tick-july"}


def booted(now: datetime, **options: object) -> Scheduler:
    scheduler = Scheduler(using="default", **options)  # type: ignore[arg-type]
    scheduler.boot(now=now)
    return scheduler


def tick_jobs() -> list[tuple[str, list]]:  # type: ignore[type-arg]
    jobs = Job.objects.filter(task_path="testproject.control_tasks.tick").order_by("pk")
    return [(job.args[0], job.priority) for job in jobs]


class SyncTests(TestCase):
    def test_boot_syncs_static_definitions_and_keeps_dynamic_rows(self) -> None:
        RecurringTask.objects.create(key="removed", schedule="@daily", task_path="x.y")
        RecurringTask.objects.create(
            key="dynamic", schedule="@daily", task_path="testproject.tasks.add", static=False
        )
        booted(NEW_YEAR - timedelta(hours=1))
        keys = set(RecurringTask.objects.values_list("key", flat=True))
        self.assertTrue(STATIC_KEYS <= keys)
        self.assertIn("dynamic", keys)
        self.assertNotIn("removed", keys)
        july = RecurringTask.objects.get(key="tick-july")
        self.assertEqual((july.schedule, july.priority), ("30 4 1 7 *", 5))
        self.assertEqual(july.arguments, {"args": ["july"], "kwargs": {}})

    def test_invalid_definitions_stop_the_boot(self) -> None:
        bad = {"bad": {"task": "testproject.tasks.add", "schedule": "61 * * * *"}}
        with (
            override_settings(ROBUST_QUEUE={"recurring_tasks": bad}),
            self.assertRaisesMessage(ConfigurationError, "does not parse"),
        ):
            booted(NEW_YEAR)
        self.assertFalse(RecurringTask.objects.exists())

    def test_settings_definitions_are_enqueued_with_their_options(self) -> None:
        entries = {
            "settings-tick": {
                "task": "testproject.tasks.add",
                "schedule": "0 3 1 1 *",
                "args": [2, 3],
                "queue_name": "cron",
                "priority": 7,
            }
        }
        with override_settings(ROBUST_QUEUE={"recurring_tasks": entries}):
            scheduler = booted(NEW_YEAR - timedelta(minutes=1))
            scheduler.run_once(now=NEW_YEAR)
        job = Job.objects.get(task_path="testproject.tasks.add")
        self.assertEqual((job.queue_name, job.priority, job.args), ("cron", 7, [2, 3]))


class SlotTests(TestCase):
    def test_a_due_slot_is_enqueued_with_its_dedup_row(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(hours=1))
        scheduler.run_once(now=NEW_YEAR - timedelta(seconds=1))
        self.assertEqual(tick_jobs(), [])
        wait = scheduler.run_once(now=NEW_YEAR + timedelta(seconds=1))
        self.assertEqual(tick_jobs(), [("new-year", 0)])
        execution = RecurringExecution.objects.get()
        self.assertEqual((execution.task_key, execution.run_at), ("tick-new-year", NEW_YEAR))
        self.assertEqual(execution.job, Job.objects.get())
        self.assertEqual(wait, scheduler.polling_interval)
        scheduler.run_once(now=NEW_YEAR + timedelta(seconds=2))
        self.assertEqual(len(tick_jobs()), 1)


class WaitTests(TestCase):
    """The wait ``run_once`` returns, with a clock the test moves."""

    def clock(self, *readings: float) -> Callable[[], float]:
        return iter(readings).__next__

    def test_a_slot_nearer_than_the_polling_interval_is_waited_for_exactly(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(hours=1), monotonic=self.clock(50.0, 50.0))
        self.assertEqual(scheduler.run_once(now=NEW_YEAR - timedelta(seconds=12.5)), 12.5)

    def test_the_time_the_tick_took_comes_off_the_wait(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(hours=1), monotonic=self.clock(50.0, 50.75))
        self.assertEqual(scheduler.run_once(now=NEW_YEAR - timedelta(seconds=12.5)), 11.75)

    def test_a_slot_further_away_waits_one_polling_interval(self) -> None:
        scheduler = booted(
            NEW_YEAR - timedelta(hours=1), polling_interval=30.0, monotonic=self.clock(0.0, 9.0)
        )
        self.assertEqual(scheduler.run_once(now=NEW_YEAR - timedelta(minutes=10)), 30.0)

    def test_a_tick_that_overran_the_slot_waits_nothing(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(hours=1), monotonic=self.clock(0.0, 20.0))
        self.assertEqual(scheduler.run_once(now=NEW_YEAR - timedelta(seconds=12.5)), 0.0)

    def test_two_schedulers_enqueue_a_slot_once(self) -> None:
        first, second = booted(JULY - timedelta(days=1)), booted(JULY - timedelta(days=1))
        first.run_once(now=JULY)
        second.run_once(now=JULY + timedelta(seconds=3))
        self.assertEqual(tick_jobs(), [("july", 5)])

    def test_missed_slots_are_not_back_filled(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(hours=1))
        scheduler.run_once(now=NEW_YEAR + timedelta(days=3 * 365 + 10))
        runs = list(
            RecurringExecution.objects.filter(task_key="tick-new-year").values_list(
                "run_at", flat=True
            )
        )
        self.assertEqual(runs, [datetime(2034, 1, 1, 3, 0, tzinfo=UTC)])

    def test_a_new_scheduler_skips_the_slot_it_missed(self) -> None:
        booted(NEW_YEAR + timedelta(hours=1)).run_once(now=NEW_YEAR + timedelta(hours=1))
        self.assertEqual(tick_jobs(), [])

    def test_catch_up_enqueues_the_last_missed_slot_once(self) -> None:
        booted(NEW_YEAR + timedelta(hours=1), catch_up=True)
        booted(NEW_YEAR + timedelta(hours=2), catch_up=True)
        self.assertEqual(tick_jobs(), [("new-year", 0)])

    def test_catch_up_ignores_slots_older_than_the_dedup_retention(self) -> None:
        booted(JULY + timedelta(days=8), catch_up=True, dedup_retention=timedelta(days=7))
        self.assertEqual(tick_jobs(), [])

    def test_dedup_rows_are_cleared_after_their_retention_not_with_jobs(self) -> None:
        now = datetime.now(UTC)
        old = RecurringExecution.objects.create(task_key="k", run_at=now - timedelta(days=8))
        recent = RecurringExecution.objects.create(task_key="k", run_at=now - timedelta(days=6))
        Scheduler(using="default").run_once()
        remaining = set(RecurringExecution.objects.values_list("pk", flat=True))
        self.assertEqual(remaining, {recent.pk})
        self.assertNotIn(old.pk, remaining)


class SchedulerRaceTests(TransactionTestCase):
    def test_racing_schedulers_enqueue_each_slot_exactly_once(self) -> None:
        schedulers = [booted(NEW_YEAR - timedelta(minutes=1)) for _ in range(3)]
        barrier = threading.Barrier(len(schedulers))

        def run(scheduler: Scheduler) -> None:
            for offset in range(3):
                barrier.wait()
                scheduler.run_once(now=NEW_YEAR + timedelta(seconds=offset))
            barrier.wait()
            scheduler.run_once(now=JULY)

        run_in_threads([partial(run, s) for s in schedulers], timeout=60)
        self.assertEqual(sorted(tick_jobs()), [("july", 5), ("new-year", 0)])
        self.assertEqual(RecurringExecution.objects.count(), 2)
