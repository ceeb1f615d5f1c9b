"""When a runtime schedule runs: cron in its time zone, or an interval
aligned on the epoch (no DB)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.test import SimpleTestCase

from robust_queue.options.slots import Slots, time_zone_error
from robust_queue.processes.config import SchedulerConfig

AT = datetime(2031, 3, 30, 0, 0, 10, tzinfo=UTC)


class IntervalTests(SimpleTestCase):
    def test_interval_slots_are_multiples_of_the_interval_since_the_epoch(self) -> None:
        every = Slots(every=timedelta(seconds=30))
        self.assertEqual(every.next_after(AT), AT.replace(second=30))
        self.assertEqual(every.next_after(AT.replace(second=30)), AT.replace(minute=1, second=0))
        self.assertEqual(every.previous_before(AT.replace(second=30)), AT.replace(second=0))
        self.assertEqual(every.previous_before(AT), AT.replace(second=0))

    def test_the_latest_slot_of_an_interval_is_computed_not_stepped(self) -> None:
        every = Slots(every=timedelta(seconds=1))
        first = AT - timedelta(days=400)
        self.assertEqual(every.latest(first, AT + timedelta(microseconds=5)), AT)
        self.assertEqual(every.latest(AT, AT), AT)

    def test_an_interval_reads_as_words(self) -> None:
        self.assertEqual(str(Slots(every=timedelta(hours=2))), "every 2 hours")
        self.assertEqual(str(Slots(every=timedelta(seconds=1))), "every 1 second")
        self.assertEqual(str(Slots(every=timedelta(seconds=90))), "every 90 seconds")
        self.assertEqual(str(Slots(every=timedelta(seconds=1.5))), "every 1.5 seconds")
        self.assertEqual(
            str(Slots(cron="0 9 * * *", time_zone="Asia/Tokyo")), "0 9 * * * (Asia/Tokyo)"
        )


class CronTimeZoneTests(SimpleTestCase):
    def test_cron_slots_are_read_in_the_schedules_time_zone(self) -> None:
        paris = Slots(cron="0 9 * * *", time_zone="Europe/Paris")
        # The night of the change to summer time: 09:00 is 07:00 UTC.
        self.assertEqual(paris.next_after(AT), datetime(2031, 3, 30, 7, 0, tzinfo=UTC))
        self.assertEqual(
            Slots(cron="0 9 * * *").next_after(AT), datetime(2031, 3, 30, 9, 0, tzinfo=UTC)
        )
        self.assertEqual(paris.previous_before(AT), datetime(2031, 3, 29, 8, 0, tzinfo=UTC))

    def test_the_latest_cron_slot_steps_from_the_first(self) -> None:
        minutely = Slots(cron="* * * * *")
        first = datetime(2031, 1, 1, 3, 0, tzinfo=UTC)
        self.assertEqual(
            minutely.latest(first, first + timedelta(minutes=5, seconds=9)),
            first + timedelta(minutes=5),
        )


class ProblemTests(SimpleTestCase):
    def test_a_valid_schedule_has_no_problems(self) -> None:
        self.assertEqual(Slots(cron="*/5 * * * *", time_zone="America/New_York").problems(), [])
        self.assertEqual(Slots(every=timedelta(seconds=1)).problems(), [])

    def test_each_problem_is_named(self) -> None:
        cases = {
            Slots(): "give a cron string or an interval",
            Slots(cron="61 * * * *"): "does not parse",
            Slots(
                cron="* * * * *", time_zone="Mars/Olympus"
            ): "time zone 'Mars/Olympus' is unknown",
            Slots(every=timedelta(milliseconds=10)): "at least 1 second",
            Slots(cron="* * * * *", every=timedelta(minutes=1)): "not both",
            Slots(every=timedelta(minutes=1), time_zone="UTC"): "takes no time zone",
        }
        for slots, message in cases.items():
            with self.subTest(slots=slots):
                self.assertIn(message, " ".join(slots.problems()))

    def test_time_zone_names_are_checked(self) -> None:
        self.assertIsNone(time_zone_error(""))
        self.assertIsNone(time_zone_error("Europe/Paris"))
        self.assertIn("unknown", time_zone_error("../../etc/passwd") or "")
        self.assertIn("IANA name", time_zone_error(3) or "")


class SchedulerConfigTests(SimpleTestCase):
    def test_always_start_must_be_a_boolean(self) -> None:
        self.assertEqual(SchedulerConfig(always_start=True).validate(), [])
        errors = SchedulerConfig(always_start="yes").validate()  # type: ignore[arg-type]
        self.assertEqual(errors, ["SchedulerConfig.always_start must be True or False, not 'yes'"])
