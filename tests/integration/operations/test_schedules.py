"""Runtime schedules through the Python API: validated like declared ones,
nothing written on a bad one, declared keys kept, and each scheduler tick
sees the rows as they are now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.test import TestCase, override_settings

import robust_queue
from robust_queue.exceptions import ScheduleError
from robust_queue.models import Job, RecurringExecution, RecurringTask
from robust_queue.operations.schedules import (
    add_schedule,
    change_schedule,
    pause_schedule,
    remove_schedule,
    resume_schedule,
)
from robust_queue.processes.scheduler import Scheduler
from testproject import control_tasks, tasks

AT = datetime(2031, 5, 4, 10, 0, 0, tzinfo=UTC)


def jobs_of(path: str = "testproject.tasks.record") -> list[list[object]]:
    return [job.args for job in Job.objects.filter(task_path=path).order_by("pk")]


class AddTests(TestCase):
    def test_a_schedule_is_stored_as_a_runtime_row(self) -> None:
        row = add_schedule(
            "nightly",
            tasks.report,
            cron="30 2 * * *",
            timezone="Europe/Paris",
            args=[7],
            queue_name="cron",
            priority=-5,
            description="Nightly figures",
        )
        stored = RecurringTask.objects.get(key="nightly")
        self.assertEqual(stored.pk, row.pk)
        self.assertIs(stored.static, False)
        self.assertIs(stored.enabled, True)
        self.assertEqual(
            (stored.task_path, stored.schedule, stored.interval, stored.time_zone),
            ("testproject.tasks.report", "30 2 * * *", None, "Europe/Paris"),
        )
        self.assertEqual(stored.arguments, {"args": [7], "kwargs": {}})
        self.assertEqual((stored.queue_name, stored.priority), ("cron", -5))
        self.assertEqual(stored.description, "Nightly figures")

    def test_a_path_and_an_interval_in_seconds_are_accepted(self) -> None:
        add_schedule("poll", "testproject.tasks.record", every=90, kwargs={"key": "p"})
        stored = RecurringTask.objects.get(key="poll")
        self.assertEqual((stored.schedule, stored.interval), ("", timedelta(seconds=90)))
        self.assertEqual(stored.arguments, {"args": [], "kwargs": {"key": "p"}})

    def test_the_api_is_exported_with_the_other_public_names(self) -> None:
        self.assertIs(robust_queue.add_schedule, add_schedule)
        self.assertIs(robust_queue.remove_schedule, remove_schedule)

    def test_a_bad_schedule_names_every_problem_and_writes_nothing(self) -> None:
        cases = [
            ({"task": "os.system", "cron": "* * * * *"}, "os.system"),
            ({"task": tasks.add, "cron": "61 * * * *"}, "does not parse"),
            ({"task": tasks.add}, "give a cron string or an interval"),
            ({"task": tasks.add, "every": 0.2}, "at least 1 second"),
            ({"task": tasks.add, "every": float("nan")}, "at least 1 second, not nan"),
            ({"task": tasks.add, "every": "5m"}, "at least 1 second, not '5m'"),
            ({"task": tasks.add, "cron": "@daily", "timezone": "Nowhere/Land"}, "unknown"),
            ({"task": tasks.add, "cron": "@daily", "args": [object()]}, "cannot be stored"),
            ({"task": tasks.add, "cron": "@daily", "args": "12"}, "args must be a list"),
            ({"task": tasks.add, "cron": "@daily", "queue_name": "bad queue"}, "queue"),
            ({"task": tasks.add, "cron": "@daily", "priority": 1000}, "priority must be"),
            ({"task": tasks.add, "cron": "@daily", "colour": "red"}, "unknown fields colour"),
        ]
        for fields, message in cases:
            with self.subTest(message=message), self.assertRaisesMessage(ScheduleError, message):
                add_schedule("bad", **fields)
        with self.assertRaisesMessage(ScheduleError, "the key must be a string"):
            add_schedule("", tasks.add, cron="@daily")
        self.assertFalse(RecurringTask.objects.exists())

    def test_several_problems_are_named_together(self) -> None:
        with self.assertRaises(ScheduleError) as raised:
            add_schedule("bad", tasks.add, cron="61 * * * *", priority=1000)
        self.assertIn("does not parse", str(raised.exception))
        self.assertIn("priority must be", str(raised.exception))

    def test_a_declared_key_cannot_be_taken(self) -> None:
        with self.assertRaisesMessage(ScheduleError, "'tick-july' is declared in code"):
            add_schedule("tick-july", tasks.add, cron="@daily", args=[1, 2])
        settings_key = {"from-settings": {"task": "testproject.tasks.add", "schedule": "@daily"}}
        with (
            override_settings(ROBUST_QUEUE={"recurring_tasks": settings_key}),
            self.assertRaisesMessage(ScheduleError, "'from-settings' is declared in code"),
        ):
            add_schedule("from-settings", tasks.add, cron="@daily")
        RecurringTask.objects.create(key="synced", schedule="@daily", task_path="x.y")
        with self.assertRaisesMessage(ScheduleError, "'synced' is declared in code"):
            add_schedule("synced", tasks.add, cron="@daily")
        self.assertEqual(list(RecurringTask.objects.values_list("key", flat=True)), ["synced"])

    def test_a_taken_runtime_key_says_how_to_edit_it(self) -> None:
        add_schedule("twice", tasks.add, cron="@daily", args=[1, 2])
        with self.assertRaisesMessage(ScheduleError, "change_schedule() or the admin edits it"):
            add_schedule("twice", tasks.add, cron="@hourly", args=[1, 2])
        self.assertEqual(RecurringTask.objects.get(key="twice").schedule, "@daily")


class ChangeTests(TestCase):
    def setUp(self) -> None:
        add_schedule("hourly", tasks.add, cron="0 * * * *", timezone="Asia/Tokyo", args=[1, 2])

    def test_only_the_given_fields_change(self) -> None:
        change_schedule("hourly", kwargs={"b": 5}, priority=3)
        row = RecurringTask.objects.get(key="hourly")
        self.assertEqual(row.arguments, {"args": [1, 2], "kwargs": {"b": 5}})
        self.assertEqual(
            (row.schedule, row.time_zone, row.priority), ("0 * * * *", "Asia/Tokyo", 3)
        )

    def test_an_interval_replaces_the_cron_string_and_its_time_zone(self) -> None:
        change_schedule("hourly", every=timedelta(minutes=5))
        row = RecurringTask.objects.get(key="hourly")
        self.assertEqual(
            (row.schedule, row.interval, row.time_zone), ("", timedelta(minutes=5), "")
        )
        change_schedule("hourly", cron="15 * * * *")
        row.refresh_from_db()
        self.assertEqual((row.schedule, row.interval), ("15 * * * *", None))

    def test_a_bad_change_writes_nothing(self) -> None:
        before = RecurringTask.objects.values().get(key="hourly")
        with self.assertRaisesMessage(ScheduleError, "does not parse"):
            change_schedule("hourly", cron="not cron", priority=1)
        with self.assertRaisesMessage(ScheduleError, "names no"):
            change_schedule("hourly", task="testproject.tasks.missing")
        self.assertEqual(RecurringTask.objects.values().get(key="hourly"), before)

    def test_declared_and_unknown_keys_are_refused(self) -> None:
        RecurringTask.objects.create(key="declared", schedule="@daily", task_path="x.y")
        with self.assertRaisesMessage(ScheduleError, "'declared' is declared in code"):
            change_schedule("declared", cron="@hourly")
        with self.assertRaisesMessage(ScheduleError, "'declared' is declared in code"):
            remove_schedule("declared")
        with self.assertRaisesMessage(ScheduleError, "No recurring task has the key 'nope'"):
            change_schedule("nope", cron="@hourly")
        self.assertEqual(RecurringTask.objects.get(key="declared").schedule, "@daily")

    def test_pause_resume_and_remove(self) -> None:
        self.assertIs(pause_schedule("hourly"), True)
        self.assertIs(pause_schedule("hourly"), False)
        self.assertIs(RecurringTask.objects.get(key="hourly").enabled, False)
        self.assertIs(resume_schedule("hourly"), True)
        self.assertIs(RecurringTask.objects.get(key="hourly").enabled, True)
        remove_schedule("hourly")
        self.assertFalse(RecurringTask.objects.filter(key="hourly").exists())
        with self.assertRaisesMessage(ScheduleError, "No recurring task has the key 'hourly'"):
            pause_schedule("hourly")


class SchedulerTests(TestCase):
    """Each tick reads the rows: no restart between an edit and its effect."""

    def scheduler(self) -> Scheduler:
        scheduler = Scheduler(using="default")
        scheduler.boot(now=AT)
        return scheduler

    def test_an_added_schedule_runs_from_the_next_tick(self) -> None:
        scheduler = self.scheduler()
        add_schedule("rt", tasks.record, every=10, args=["rt"])
        scheduler.run_once(now=AT + timedelta(seconds=1))
        self.assertEqual(jobs_of(), [])
        scheduler.run_once(now=AT + timedelta(seconds=10))
        self.assertEqual(jobs_of(), [["rt"]])
        run_at = RecurringExecution.objects.get(task_key="rt").run_at
        self.assertEqual(run_at, AT + timedelta(seconds=10))

    def test_paused_removed_and_changed_schedules_are_seen_at_once(self) -> None:
        scheduler = self.scheduler()
        add_schedule("rt", tasks.record, every=10, args=["one"])
        scheduler.run_once(now=AT + timedelta(seconds=1))
        pause_schedule("rt")
        scheduler.run_once(now=AT + timedelta(seconds=10))
        resume_schedule("rt")
        scheduler.run_once(now=AT + timedelta(seconds=11))
        change_schedule("rt", args=["two"])
        scheduler.run_once(now=AT + timedelta(seconds=20))
        change_schedule("rt", every=60)
        scheduler.run_once(now=AT + timedelta(seconds=30))
        scheduler.run_once(now=AT + timedelta(seconds=60))
        remove_schedule("rt")
        scheduler.run_once(now=AT + timedelta(seconds=120))
        self.assertEqual(jobs_of(), [["two"], ["two"]])
        slots = RecurringExecution.objects.filter(task_key="rt").order_by("run_at")
        self.assertEqual(
            [s.run_at for s in slots], [AT + timedelta(seconds=20), AT + timedelta(seconds=60)]
        )

    def test_a_slot_planned_before_a_removal_is_not_enqueued(self) -> None:
        add_schedule("rt", tasks.record, every=10, args=["rt"])
        planned = RecurringTask.objects.get(key="rt")
        remove_schedule("rt")
        self.assertIsNone(planned.enqueue(AT))
        self.assertEqual(jobs_of(), [])

    def test_two_schedulers_enqueue_a_runtime_slot_once(self) -> None:
        first, second = self.scheduler(), self.scheduler()
        add_schedule("rt", tasks.record, cron="*/5 * * * *", timezone="Asia/Kolkata", args=["x"])
        for scheduler in (first, second):
            scheduler.run_once(now=AT + timedelta(seconds=1))
        for scheduler in (second, first):
            scheduler.run_once(now=AT + timedelta(minutes=5))
        self.assertEqual(jobs_of(), [["x"]])

    def test_a_runtime_cron_runs_in_its_time_zone(self) -> None:
        scheduler = self.scheduler()
        # 10:00 UTC is 15:30 in Kolkata: the 16:00 slot there is 10:30 UTC.
        add_schedule("rt", tasks.record, cron="0 16 * * *", timezone="Asia/Kolkata", args=["k"])
        scheduler.run_once(now=AT + timedelta(seconds=1))
        scheduler.run_once(now=AT + timedelta(minutes=29))
        self.assertEqual(jobs_of(), [])
        scheduler.run_once(now=AT + timedelta(minutes=30))
        self.assertEqual(jobs_of(), [["k"]])

    def test_a_row_whose_schedule_no_longer_reads_is_skipped_and_logged(self) -> None:
        scheduler = self.scheduler()
        add_schedule("rt", tasks.record, cron="* * * * *", args=["rt"])
        add_schedule("ok", tasks.record, every=10, args=["ok"])
        RecurringTask.objects.filter(key="rt").update(time_zone="Nowhere/Land")
        with self.assertLogs("robust_queue.processes.scheduler", "ERROR") as logs:
            scheduler.run_once(now=AT + timedelta(seconds=1))
        self.assertIn("rt is disabled in this scheduler", logs.output[0])
        scheduler.run_once(now=AT + timedelta(seconds=60))
        self.assertEqual(jobs_of(), [["ok"]])
        RecurringTask.objects.filter(key="rt").update(time_zone="")
        scheduler.run_once(now=AT + timedelta(seconds=61))
        scheduler.run_once(now=AT + timedelta(seconds=120))
        self.assertEqual(sorted(map(str, jobs_of())), ["['ok']", "['ok']", "['rt']"])


class DeclaredWinsTests(TestCase):
    def test_a_deploy_that_declares_a_runtime_key_replaces_the_runtime_row(self) -> None:
        """The declaration wins at the next scheduler boot, with a warning."""
        RecurringTask.objects.create(
            key="tick-july",
            schedule="* * * * *",
            task_path="testproject.tasks.record",
            arguments={"args": ["runtime"], "kwargs": {}},
            static=False,
            enabled=False,
        )
        with self.assertLogs("robust_queue.models.recurring_task", "WARNING") as logs:
            Scheduler(using="default").boot(now=AT)
        self.assertIn("tick-july is now declared in code", logs.output[0])
        self.assertIn("(* * * * *) is replaced", logs.output[0])
        row = RecurringTask.objects.get(key="tick-july")
        self.assertIs(row.static, True)
        self.assertIs(row.enabled, True)
        self.assertEqual(row.task_path, control_tasks.tick.module_path)
        self.assertEqual(row.arguments, {"args": ["july"], "kwargs": {}})
