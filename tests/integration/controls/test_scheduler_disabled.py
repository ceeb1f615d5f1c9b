"""A recurring task an operator disabled enqueues nothing, on any scheduler."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase

from robust_queue.models import RecurringExecution, RecurringTask
from testproject import control_tasks  # noqa: F401 - declares the ticks

from .test_scheduler import JULY, NEW_YEAR, booted, tick_jobs


class DisabledScheduleTests(TestCase):
    def test_a_disabled_schedule_enqueues_nothing_on_every_scheduler(self) -> None:
        first = booted(NEW_YEAR - timedelta(minutes=1))
        second = booted(NEW_YEAR - timedelta(minutes=1))
        self.assertIs(RecurringTask.objects.get(key="tick-new-year").disable(), True)
        first.run_once(now=NEW_YEAR)
        second.run_once(now=NEW_YEAR)
        self.assertEqual(tick_jobs(), [])
        self.assertFalse(RecurringExecution.objects.filter(task_key="tick-new-year").exists())

    def test_a_slot_planned_before_the_switch_is_not_enqueued(self) -> None:
        """The check runs in the slot's transaction, not only at reload."""
        scheduler = booted(NEW_YEAR - timedelta(minutes=1))
        planned = RecurringTask.objects.get(key="tick-new-year")
        RecurringTask.objects.get(key="tick-new-year").disable()
        self.assertIsNone(planned.enqueue(NEW_YEAR))
        scheduler.run_once(now=NEW_YEAR)
        self.assertEqual(tick_jobs(), [])

    def test_the_switch_outlives_a_sync_of_the_definitions(self) -> None:
        RecurringTask.objects.all().delete()
        booted(NEW_YEAR - timedelta(hours=1))
        RecurringTask.objects.get(key="tick-july").disable()
        booted(NEW_YEAR - timedelta(hours=1))
        self.assertIs(RecurringTask.objects.get(key="tick-july").enabled, False)

    def test_enabled_again_it_runs_from_its_next_slot_without_back_fill(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(minutes=1))
        task = RecurringTask.objects.get(key="tick-new-year")
        task.disable()
        scheduler.run_once(now=NEW_YEAR)
        self.assertIs(task.enable(), True)
        self.assertIs(task.enable(), False)
        scheduler.run_once(now=NEW_YEAR + timedelta(minutes=1))
        self.assertEqual(tick_jobs(), [])
        scheduler.run_once(now=NEW_YEAR.replace(year=NEW_YEAR.year + 1))
        self.assertEqual([args for args, _ in tick_jobs()].count("new-year"), 1)
        slot = RecurringExecution.objects.get(task_key="tick-new-year")
        self.assertEqual(slot.run_at.year, NEW_YEAR.year + 1)

    def test_other_tasks_keep_running(self) -> None:
        scheduler = booted(NEW_YEAR - timedelta(minutes=1))
        RecurringTask.objects.get(key="tick-new-year").disable()
        scheduler.run_once(now=NEW_YEAR)
        scheduler.run_once(now=JULY)
        self.assertEqual([args for args, _ in tick_jobs()], ["july"])
