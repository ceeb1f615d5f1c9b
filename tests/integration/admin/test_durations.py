"""Durations: a job's page says how long it waited and ran; the
overview's busiest tasks show p50/p95 run time and wait, throughput and
failure rate over the last hour and the last day; a discard is a
deletion in the audit trail."""

from __future__ import annotations

import datetime as dt

from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.urls import reverse
from django.utils import timezone

from robust_queue.models import Job, Statistic
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist, job_url
from tests.integration.admin.test_task_page import TASK, _record


class JobDurationTests(AdminTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)

    def _shown(self, job: Job) -> tuple[str, str]:
        page = self.client.get(job_url("change", job.pk))
        self.assertEqual(page.status_code, 200)
        return page.context["waited"], page.context["ran_for"]

    def _set(self, job: Job, **times: dt.datetime | None) -> None:
        Job.objects.filter(pk=job.pk).update(**times)

    def test_a_finished_job_shows_its_wait_and_run_time(self) -> None:
        enqueued = timezone.now() - dt.timedelta(days=1)
        started = enqueued + dt.timedelta(seconds=90)
        finished = started + dt.timedelta(hours=2, minutes=5)
        self._set(self.finished, enqueued_at=enqueued, started_at=started, finished_at=finished)
        self.assertEqual(self._shown(self.finished), ("1 min 30 s", "2 h 5 min"))
        page = self.client.get(job_url("change", self.finished.pk))
        self.assertContains(page, '<td id="rq-job-waited">1 min 30 s</td>', html=True)
        self.assertContains(page, '<td id="rq-job-ran-for">2 h 5 min</td>', html=True)

    def test_a_job_due_later_waits_from_its_due_time(self) -> None:
        enqueued = timezone.now() - dt.timedelta(days=1)
        due = enqueued + dt.timedelta(hours=1)
        started = due + dt.timedelta(seconds=12)
        self._set(
            self.finished,
            enqueued_at=enqueued,
            run_after=due,
            started_at=started,
            finished_at=started + dt.timedelta(seconds=3),
        )
        self.assertEqual(self._shown(self.finished), ("12 s", "3 s"))

    def test_a_running_job_shows_how_long_it_has_been_running(self) -> None:
        started = timezone.now() - dt.timedelta(hours=3, seconds=10)
        self._set(
            self.running,
            enqueued_at=started - dt.timedelta(seconds=45),
            run_after=None,
            started_at=started,
            last_attempted_at=started,
        )
        self.assertEqual(self._shown(self.running), ("45 s", "running for 3 h"))

    def test_a_waiting_job_shows_how_long_it_has_been_waiting(self) -> None:
        self._set(self.ready, enqueued_at=timezone.now() - dt.timedelta(hours=2, seconds=20))
        self.assertEqual(self._shown(self.ready), ("waiting for 2 h", "—"))
        waited, ran_for = self._shown(self.scheduled)
        self.assertTrue(waited.startswith("not due yet (due in "), waited)
        self.assertEqual(ran_for, "—")

    def test_a_failed_job_ran_until_its_last_attempt_ended(self) -> None:
        waited, ran_for = self._shown(self.failed)
        self.assertNotEqual(waited, "—")
        self.assertNotEqual(ran_for, "—")

    def test_missing_or_odd_times_show_a_dash(self) -> None:
        self._set(self.finished, started_at=None, finished_at=timezone.now())
        self.assertEqual(self._shown(self.finished), ("—", "—"))
        # Started before it was enqueued, finished before it started.
        now = timezone.now()
        self._set(
            self.finished,
            enqueued_at=now,
            started_at=now - dt.timedelta(hours=1),
            finished_at=now - dt.timedelta(hours=2),
        )
        self.assertEqual(self._shown(self.finished), ("—", "—"))
        self._set(self.running, started_at=None, last_attempted_at=None)
        self.assertEqual(self._shown(self.running)[1], "—")
        self._set(self.running, last_attempted_at=now + dt.timedelta(hours=1))
        self.assertEqual(self._shown(self.running)[1], "—")


class OverviewDurationTests(AdminTestCase):
    def setUp(self) -> None:
        Statistic.objects.all().delete()
        _record(5, finished=90, failed=10, run_bucket=7, wait_bucket=4)
        _record(120, finished=200, failed=0, run_bucket=9, wait_bucket=4)
        self.login(self.viewer)

    def test_busiest_tasks_show_hour_and_day_percentiles(self) -> None:
        page = self.client.get(reverse("admin:robust_queue_overview"))
        ((path, name, windows),) = page.context["top_tasks"]
        self.assertEqual((path, name), (TASK, "add"))
        (hour_label, hour), (day_label, day) = windows
        self.assertEqual((hour_label, day_label), ("Last hour", "Last day"))
        self.assertEqual((hour.run_p50, hour.run_p95), ("≈ 750 ms", "≈ 975 ms"))
        self.assertEqual((day.run_p50, day.run_p95), ("≈ 3.1 s", "≈ 4.8 s"))
        self.assertEqual((hour.wait_p50, day.wait_p50), ("≈ 75 ms", "≈ 75 ms"))
        self.assertEqual((hour.failure_rate, day.failure_rate), ("10.0%", "3.3%"))
        self.assertEqual((hour.throughput, day.throughput), ("1.5/min", "12.1/h"))
        for shown in ("≈ 750 ms", "≈ 975 ms", "≈ 3.1 s", "≈ 4.8 s", "1.5/min", "12.1/h"):
            self.assertContains(page, shown)
        self.assertContains(page, "Run p50")
        self.assertContains(page, "Wait p95")

    def test_a_task_idle_in_the_last_hour_still_shows_its_day(self) -> None:
        _record(300, finished=7, failed=0, run_bucket=9, wait_bucket=4, task_path="x.quiet")
        page = self.client.get(reverse("admin:robust_queue_overview"))
        windows = dict((path, w) for path, _, w in page.context["top_tasks"])["x.quiet"]
        (_, hour), (_, day) = windows
        self.assertEqual((hour.attempts, hour.run_p50, hour.failure_rate), (0, "—", "—"))
        self.assertEqual((day.attempts, day.run_p50), (7, "≈ 3.8 s"))


class DiscardAuditTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def _discard_selected(self, selected: list[int], across: bool = False) -> None:
        url = changelist(state="failed")
        data = {
            "action": "discard_selected",
            "_selected_action": selected,
            "index": 0,
            "select_across": int(across),
        }
        page = self.client.post(url, data)
        confirmed = {
            **data,
            "confirm": "yes",
            "max_pk": page.context["max_pk"],
            "count": page.context["count"],
        }
        self.assertEqual(self.client.post(url, confirmed).status_code, 302)

    def test_a_bulk_discard_is_a_deletion(self) -> None:
        self._discard_selected([self.failed.pk])
        summary = LogEntry.objects.get(object_id=None)
        self.assertEqual(summary.action_flag, DELETION)
        self.assertEqual(summary.change_message, "Discarded 1 of 1 job(s).")
        each = LogEntry.objects.get(object_id=str(self.failed.pk))
        self.assertEqual(each.action_flag, DELETION)

    def test_a_single_discard_is_a_deletion_and_a_retry_a_change(self) -> None:
        self.client.post(job_url("action", self.failed.pk, "retry"))
        self.client.post(job_url("action", self.finished.pk, "discard"))
        flags = dict(LogEntry.objects.values_list("object_id", "action_flag"))
        self.assertEqual(flags, {str(self.failed.pk): CHANGE, str(self.finished.pk): DELETION})

    def test_a_discard_on_the_queue_is_a_deletion(self) -> None:
        from robust_queue.admin.jobs import bulk
        from robust_queue.running.performing import perform
        from tests.helpers import claim

        more = [tasks.fail.enqueue(f"n{i}").id for i in range(2)]
        work_off()
        self.assertEqual(len(more), 2)
        original, bulk.BACKGROUND_ABOVE = bulk.BACKGROUND_ABOVE, 1
        self.addCleanup(setattr, bulk, "BACKGROUND_ABOVE", original)
        self._discard_selected([self.failed.pk], across=True)
        (row,) = claim(1)
        perform(row)
        done = LogEntry.objects.get(change_message__startswith="Discarded")
        self.assertEqual(done.action_flag, DELETION)
