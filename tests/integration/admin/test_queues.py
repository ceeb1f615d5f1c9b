"""The overview's queue table lists every known queue and says truthfully
whether a live worker serves it."""

from __future__ import annotations

import re
from datetime import timedelta
from unittest import mock

from django.db import connection
from django.urls import reverse
from django.utils import timezone

from robust_queue.admin import display
from robust_queue.models import (
    ClaimedExecution,
    Job,
    Pause,
    Process,
    ProcessKind,
    ReadyExecution,
)
from robust_queue.operations.queues import queue_rows
from testproject import tasks
from tests.integration.admin.base import AdminTestCase, changelist


def worker(name: str, queues: list[str], threads: int, age: timedelta = timedelta()) -> Process:
    return Process.objects.create(
        kind=ProcessKind.WORKER,
        name=name,
        pid=1,
        hostname="test",
        metadata={"queues": queues, "threads": threads},
        last_heartbeat_at=timezone.now() - age,
    )


class QueueTableTests(AdminTestCase):
    def setUp(self) -> None:
        # The base's process (no selector recorded) would poll everything.
        Process.objects.filter(pk=self.process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(days=1)
        )

    def _rows(self) -> dict[str, object]:
        return {row.name: row for row in queue_rows("default")}

    def test_an_idle_queue_a_worker_polls_is_listed(self) -> None:
        worker("w1", ["emails", "mail*"], 3)
        rows = self._rows()
        self.assertIn("emails", rows)
        self.assertEqual(rows["emails"].status, "Running")  # type: ignore[attr-defined]
        self.login()
        page = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(page, ">emails</a>")

    def test_a_queue_no_live_worker_polls_says_so(self) -> None:
        worker("w1", ["emails"], 3)
        worker("dead", ["reports"], 3, age=timedelta(hours=1))
        rows = self._rows()
        self.assertEqual(rows["reports"].status, "No worker")  # type: ignore[attr-defined]
        self.assertEqual(rows["reports"].workers, 0)  # type: ignore[attr-defined]

    def test_a_quiet_or_stopping_worker_serves_no_queue(self) -> None:
        tasks.add.using(queue_name="emails").enqueue(1, 2)
        for command in ("quiet", "quieted", "stop", "stopping"):
            with self.subTest(command=command):
                Process.objects.filter(kind=ProcessKind.WORKER).delete()
                quiet = worker("w1", ["emails"], 3)
                Process.objects.filter(pk=quiet.pk).update(command=command)
                rows = self._rows()
                self.assertEqual(rows["emails"].status, "No worker")  # type: ignore[attr-defined]
                self.assertEqual(rows["emails"].workers, 0)  # type: ignore[attr-defined]

    def test_ready_jobs_that_no_live_worker_polls_are_flagged_no_worker(self) -> None:
        """A queue with ready jobs, a live worker polling other queues and a
        dead one polling it: the table says "No worker" in its status and
        its Workers column, not a bare dash."""
        worker("w1", ["emails"], 3)
        worker("dead", ["reports"], 3, age=timedelta(hours=1))
        reports = self._rows()["reports"]
        self.assertEqual((int(reports.size), reports.workers), (1, 0))  # type: ignore[attr-defined]
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_overview")).content.decode()
        cells = _cells_of_queue(page, "reports")
        self.assertEqual(cells[1], "No worker")
        self.assertEqual(cells[2], "1")
        self.assertEqual(cells[5], "no worker")
        self.assertEqual(_cells_of_queue(page, "emails")[5], "1 · 0/3 threads busy")

    def test_a_prefix_or_star_selector_serves_a_queue(self) -> None:
        worker("w1", ["rep*"], 3)
        self.assertEqual(self._rows()["reports"].status, "Running")  # type: ignore[attr-defined]

    def test_every_busy_thread_with_jobs_waiting_is_saturated(self) -> None:
        busy = worker("w1", ["*"], 1)
        tasks.add.using(queue_name="slow").enqueue(1, 1)
        self.running.claimed_execution.__class__.objects.filter(job=self.running).update(
            process=busy
        )
        rows = self._rows()
        self.assertEqual(rows["slow"].status, "Saturated")  # type: ignore[attr-defined]
        slow = rows["slow"]
        self.assertEqual((slow.busy, slow.threads), (1, 1))  # type: ignore[attr-defined]
        self.assertEqual(rows["slow"].running, 1)  # type: ignore[attr-defined]

    def test_a_paused_queue_says_paused(self) -> None:
        worker("w1", ["*"], 3)
        Pause.objects.create(queue_name="reports")
        self.assertEqual(self._rows()["reports"].status, "Paused")  # type: ignore[attr-defined]

    def test_queues_of_scheduled_and_finished_jobs_are_known(self) -> None:
        rows = self._rows()
        self.assertIn("default", rows)
        self.assertIn("slow", rows)


def _row_of_queue(page: str, name: str) -> str:
    """The HTML of ``name``'s row in the overview's queue table."""
    table = page[page.index('id="rq-queues"') :]
    row = next(r for r in table.split("<tr>") if f">{name}</a>" in r)
    return row.split("</tr>")[0]


def _cells_of_queue(page: str, name: str) -> list[str]:
    """The text of each cell of ``name``'s row."""
    cells = re.findall(r"<td[^>]*>(.*?)</td>", _row_of_queue(page, name), re.S)
    return [" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in cells]


class HumanUnitTests(AdminTestCase):
    def test_durations_read_well(self) -> None:
        for seconds, shown in [
            (0, "0 s"),
            (0.25, "250 ms"),
            (0.0004, "0 ms"),
            (12, "12 s"),
            (65, "1 min 5 s"),
            (34 * 60, "34 min"),
            (7500, "2 h 5 min"),
            (3 * 86400 + 4 * 3600, "3 d 4 h"),
        ]:
            with self.subTest(seconds=seconds):
                self.assertEqual(display.duration(timedelta(seconds=seconds)), shown)

    def test_relative_times(self) -> None:
        now = timezone.now()
        self.assertEqual(display.ago(now - timedelta(seconds=12), now), "12 s ago")
        self.assertEqual(display.ago(now + timedelta(minutes=4), now), "in 4 min")
        # Under a second to go is "in 1 s", not "0 s ago" (a next run a
        # moment away read as already past).
        self.assertEqual(display.ago(now + timedelta(milliseconds=400), now), "in 1 s")
        self.assertEqual(display.ago(now - timedelta(milliseconds=400), now), "0 s ago")


class HeartbeatTests(AdminTestCase):
    def test_a_fresh_heartbeat_is_in_seconds(self) -> None:
        self.login()
        page = self.client.get(reverse("admin:robust_queue_process_changelist"))
        self.assertContains(page, " s ago")
        self.assertNotContains(page, "0 minutes ago")

    def test_the_supervisor_column_names_the_supervisor(self) -> None:
        supervisor = Process.objects.create(
            kind=ProcessKind.SUPERVISOR, name="supervisor-web1", pid=2, hostname="test"
        )
        Process.objects.filter(pk=self.process.pk).update(supervisor=supervisor)
        self.login()
        page = self.client.get(reverse("admin:robust_queue_process_changelist"))
        url = reverse("admin:robust_queue_process_change", args=[supervisor.pk])
        self.assertContains(page, f'<a href="{url}">supervisor-web1</a>')


class QueueTableFiguresTests(AdminTestCase):
    def setUp(self) -> None:
        Process.objects.filter(pk=self.process.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(days=1)
        )

    def test_running_and_threads_figures_are_grouped(self) -> None:
        worker("big", ["*"], 1500)
        jobs = Job.objects.bulk_create(
            Job(
                task_path="testproject.tasks.add",
                queue_name="bulk",
                backend_alias="default",
                enqueued_at=timezone.now(),
            )
            for _ in range(1200)
        )
        ClaimedExecution.objects.bulk_create(
            ClaimedExecution(job=job, process=self.process) for job in jobs
        )
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(page, '<td class="rq-num">1,200</td>', html=True)
        self.assertContains(page, "/1,500 threads busy")

    def test_a_worker_queue_no_task_uses_is_flagged(self) -> None:
        worker("typo", ["emials", "default"], 3)
        rows = {row.name: row for row in queue_rows("default")}
        self.assertIs(rows["emials"].is_used, False)
        self.assertIs(rows["default"].is_used, True)
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(page, "no task uses it", count=1)


class DatabaseClockTests(AdminTestCase):
    """Latency, heartbeats and the overdue flag read the database's clock,
    not this host's (on SQLite the two are one)."""

    def setUp(self) -> None:
        if connection.vendor == "sqlite":
            self.skipTest("SQLite's clock is this host's")
        self.login(self.viewer)

    def test_a_host_clock_two_hours_ahead_changes_nothing(self) -> None:
        ReadyExecution.objects.filter(job=self.ready).update(
            created_at=timezone.now() - timedelta(minutes=5)
        )
        ahead = timezone.now() + timedelta(hours=2)
        with mock.patch("django.utils.timezone.now", return_value=ahead):
            rows = {row.name: row for row in queue_rows("default")}
            page = self.client.get(changelist(state="scheduled"))
        self.assertLess(rows["reports"].latency, timedelta(hours=1))
        # Due in an hour by the database's clock: not overdue yet.
        self.assertNotContains(page, ">overdue<")
