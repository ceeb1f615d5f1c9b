"""A recurring row whose task is unknown: logged once, then skipped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.test import TestCase

from robust_queue.models import Job, RecurringExecution, RecurringTask
from robust_queue.processes.scheduler import Scheduler
from testproject import control_tasks  # noqa: F401 - declares the ticks

# A day when none of the test ticks has a slot.
START = datetime(2031, 3, 10, 0, 30, tzinfo=UTC)
HOUR = timedelta(hours=1)
LOGGER = "robust_queue.processes.scheduler"


class UnknownRecurringTaskTests(TestCase):
    def setUp(self) -> None:
        self.row = RecurringTask.objects.create(
            key="gone",
            schedule="0 * * * *",
            task_path="shop.tasks.removed",
            static=False,
        )
        self.scheduler = Scheduler(using="default")
        self.scheduler.boot(now=START)

    def run_hours(self, *hours: int) -> None:
        for hour in hours:
            self.scheduler.run_once(now=START + hour * HOUR)

    def test_it_is_logged_once_without_a_traceback_and_disabled(self) -> None:
        with self.assertLogs(LOGGER, level="ERROR") as logs:
            self.run_hours(1, 2, 3, 4)
        [record] = logs.records
        self.assertIn("Recurring task gone is disabled", record.getMessage())
        self.assertIn("'shop.tasks.removed' names no task declared", record.getMessage())
        self.assertIsNone(record.exc_info)
        self.assertNotIn("gone", self.scheduler.planned)
        self.assertFalse(Job.objects.exists())

    def test_it_runs_again_once_its_row_names_a_known_task(self) -> None:
        with self.assertLogs(LOGGER, level="ERROR"):
            self.run_hours(1)
        RecurringTask.objects.filter(pk=self.row.pk).update(
            task_path="testproject.tasks.add", arguments={"args": [1, 2], "kwargs": {}}
        )
        self.run_hours(2, 3, 4)
        self.assertTrue(Job.objects.filter(task_path="testproject.tasks.add").exists())
        self.assertIn("gone", self.scheduler.planned)

    def test_a_priority_the_task_refuses_disables_it_too(self) -> None:
        RecurringTask.objects.filter(pk=self.row.pk).update(
            task_path="testproject.tasks.add", priority=1000
        )
        with self.assertLogs(LOGGER, level="ERROR") as logs:
            self.run_hours(1, 2, 3)
        [record] = logs.records
        self.assertIn("cannot enqueue 'testproject.tasks.add'", record.getMessage())
        self.assertFalse(Job.objects.exists())


# Arguments a hand-edited or forged row may hold: not the stored shape, or
# values that do not decode (a model reference to a row that is gone).
MALFORMED = {
    "not a dict": "garbage",
    "args not a list": {"args": 5, "kwargs": {}},
    "kwargs not a dict": {"args": [], "kwargs": [1]},
    "a reference to a missing row": {
        "args": [{"__rq__": "model", "v": {"model": "testproject.ledgerentry", "pk": 999999}}],
        "kwargs": {},
    },
}


class MalformedArgumentsTests(TestCase):
    """Treated like an unknown task: one line naming the key and why, then
    skipped by this scheduler until the row changes. The row itself is not
    switched off: another scheduler (say, one of newer code in a rolling
    deploy) decides for itself."""

    def setUp(self) -> None:
        self.good = RecurringTask.objects.create(
            key="fine",
            schedule="0 * * * *",
            task_path="testproject.tasks.add",
            arguments={"args": [1, 2], "kwargs": {}},
            static=False,
        )

    def bad_row(self, arguments: object) -> RecurringTask:
        return RecurringTask.objects.create(
            key="broken",
            schedule="0 * * * *",
            task_path="testproject.tasks.add",
            arguments=arguments,
            static=False,
        )

    def scheduler(self) -> Scheduler:
        scheduler = Scheduler(using="default")
        scheduler.boot(now=START)
        return scheduler

    def test_it_is_logged_once_without_a_traceback_and_skipped(self) -> None:
        for case, arguments in MALFORMED.items():
            with self.subTest(case):
                row = self.bad_row(arguments)
                scheduler = self.scheduler()
                with self.assertLogs(LOGGER, level="ERROR") as logs:
                    for hour in (1, 2, 3, 4):
                        scheduler.run_once(now=START + hour * HOUR)
                [record] = logs.records
                message = record.getMessage()
                self.assertIn(
                    "Recurring task broken is disabled in this scheduler until its "
                    "row's arguments are fixed: Recurring task 'broken'",
                    message,
                )
                self.assertIsNone(record.exc_info)
                self.assertNotIn("broken", scheduler.planned)
                # The other task runs every slot; the row stays enabled.
                self.assertEqual(Job.objects.count(), 4)
                row.refresh_from_db()
                self.assertIs(row.enabled, True)
            row.delete()
            RecurringExecution.objects.all().delete()
            Job.objects.all().delete()

    def test_the_message_says_what_is_wrong(self) -> None:
        self.bad_row(MALFORMED["args not a list"])
        with self.assertLogs(LOGGER, level="ERROR") as logs:
            self.scheduler().run_once(now=START + HOUR)
        self.assertIn(
            "stored arguments are not {'args': [...], 'kwargs': {...}}: "
            "\"{'args': 5, 'kwargs': {}}\"",
            logs.output[0],
        )

    def test_another_scheduler_decides_for_itself(self) -> None:
        """Nothing is persisted: a second scheduler tries the row too."""
        self.bad_row(MALFORMED["not a dict"])
        for scheduler in (self.scheduler(), self.scheduler()):
            with self.assertLogs(LOGGER, level="ERROR") as logs:
                scheduler.run_once(now=START + HOUR)
            self.assertEqual(len(logs.records), 1)

    def test_it_runs_again_once_its_arguments_are_fixed(self) -> None:
        row = self.bad_row(MALFORMED["kwargs not a dict"])
        scheduler = self.scheduler()
        with self.assertLogs(LOGGER, level="ERROR"):
            scheduler.run_once(now=START + HOUR)
        RecurringTask.objects.filter(pk=row.pk).update(arguments={"args": [3, 4], "kwargs": {}})
        scheduler.run_once(now=START + 2 * HOUR)
        self.assertIn("broken", scheduler.planned)
        scheduler.run_once(now=START + 3 * HOUR)
        self.assertEqual(
            sorted(Job.objects.values_list("arguments", flat=True), key=str),
            sorted(
                [{"args": [1, 2], "kwargs": {}}] * 3 + [{"args": [3, 4], "kwargs": {}}], key=str
            ),
        )
