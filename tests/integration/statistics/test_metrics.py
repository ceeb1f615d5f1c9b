"""The metrics view and command: who may read them, and what they say."""

from __future__ import annotations

import io
import re
from datetime import timedelta

from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from robust_queue.management.commands.robust_queue import SUBCOMMANDS
from robust_queue.management.commands.robust_queue_metrics import Command as MetricsCommand
from robust_queue.metrics.collect import collect
from robust_queue.metrics.exposition import render
from robust_queue.models import ClaimedExecution, Process, ProcessKind, ReadyExecution
from testproject import tasks
from tests.helpers import claim, work_off

URL = reverse("robust_queue:metrics")
TOKEN = "s3cret-token-for-scrapes"


def staff(username: str, *codenames: str) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="robust_queue", codename__in=codenames)
    )
    return user


def sample(text: str, line: str) -> float:
    """The value of the sample whose name and labels are ``line``."""
    match = re.search(rf"^{re.escape(line)} (\S+)$", text, re.M)
    if match is None:
        raise AssertionError(f"{line!r} not in:\n{text}")
    return float(match[1])


class MetricsPermissionTests(TestCase):
    def test_anonymous_requests_are_refused(self) -> None:
        self.assertEqual(self.client.get(URL).status_code, 403)

    def test_staff_without_the_permission_are_refused(self) -> None:
        self.client.force_login(staff("viewer", "view_job"))
        self.assertEqual(self.client.get(URL).status_code, 403)

    def test_staff_with_view_metrics_read_them(self) -> None:
        self.client.force_login(staff("ops", "view_metrics"))
        response = self.client.get(URL)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
        self.assertContains(response, "# TYPE robust_queue_jobs gauge")

    def test_a_non_staff_user_with_the_permission_is_refused(self) -> None:
        user = staff("api", "view_metrics")
        user.is_staff = False
        user.save()
        self.client.force_login(user)
        self.assertEqual(self.client.get(URL).status_code, 403)

    @override_settings(ROBUST_QUEUE={"metrics_token": TOKEN})
    def test_the_bearer_token_opens_them(self) -> None:
        ok = self.client.get(URL, headers={"Authorization": f"Bearer {TOKEN}"})
        self.assertEqual(ok.status_code, 200)
        for header in (f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer ", TOKEN):
            with self.subTest(header=header):
                response = self.client.get(URL, headers={"Authorization": header})
                self.assertEqual(response.status_code, 403)

    def test_without_a_token_setting_no_bearer_header_opens_them(self) -> None:
        response = self.client.get(URL, headers={"Authorization": "Bearer None"})
        self.assertEqual(response.status_code, 403)

    @override_settings(ROBUST_QUEUE={"metrics_token": TOKEN})
    def test_only_get(self) -> None:
        response = self.client.post(URL, headers={"Authorization": f"Bearer {TOKEN}"})
        self.assertEqual(response.status_code, 405)


class MetricsContentTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        tasks.add.enqueue(1, 2)
        tasks.fail.enqueue("x")
        work_off()
        tasks.report.enqueue(1)
        tasks.report.enqueue(2)
        tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
        cls.worker = Process.objects.create(
            kind=ProcessKind.WORKER,
            name="w-1",
            pid=1,
            hostname="host-a",
            metadata={"queues": ["*"], "threads": 3},
        )
        Process.objects.create(kind=ProcessKind.SUPERVISOR, name="s-1", pid=2, hostname="host-a")
        tasks.sleep_for.using(queue_name="slow").enqueue(1)
        claim(queue_name="slow", process=cls.worker)

    def text(self) -> str:
        return render(collect("default"))

    def test_released_claims_are_a_counter(self) -> None:
        """Runs given back at a worker's stop (they run again) show."""
        ClaimedExecution.objects.filter(job__queue_name="slow").release_all()
        text = self.text()
        released = (
            'robust_queue_jobs_released_total{queue="slow",task="testproject.tasks.sleep_for"}'
        )
        self.assertEqual(sample(text, released), 1)
        self.assertIn("# TYPE robust_queue_jobs_released_total counter", text)

    def test_jobs_by_state_and_queue(self) -> None:
        text = self.text()
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="reports",state="ready"}'), 2)
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="default",state="scheduled"}'), 1)
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="slow",state="running"}'), 1)
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="default",state="failed"}'), 1)
        self.assertEqual(sample(text, 'robust_queue_jobs_capped{state="ready"}'), 0)

    def test_a_state_past_the_cap_says_so(self) -> None:
        text = render(collect("default", cap=1))
        self.assertEqual(sample(text, 'robust_queue_jobs_capped{state="ready"}'), 1)
        self.assertEqual(sample(text, 'robust_queue_jobs_capped{state="failed"}'), 0)

    def test_queue_latency_processes_and_threads(self) -> None:
        text = self.text()
        self.assertGreaterEqual(
            sample(text, 'robust_queue_queue_latency_seconds{queue="reports"}'), 0
        )
        self.assertEqual(sample(text, 'robust_queue_processes{kind="worker",host="host-a"}'), 1)
        self.assertEqual(sample(text, 'robust_queue_processes{kind="supervisor",host="host-a"}'), 1)
        self.assertEqual(sample(text, 'robust_queue_worker_threads{worker="w-1",host="host-a"}'), 3)
        self.assertEqual(
            sample(text, 'robust_queue_worker_busy_threads{worker="w-1",host="host-a"}'), 1
        )

    def test_a_silent_process_is_not_counted(self) -> None:
        Process.objects.filter(name="s-1").update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        self.assertNotIn('kind="supervisor"', self.text())

    def test_the_alive_threshold_setting_decides_who_is_live(self) -> None:
        """Two minutes of silence: live by default (5 minutes), not live
        with a one-minute threshold."""
        Process.objects.filter(name="s-1").update(
            last_heartbeat_at=timezone.now() - timedelta(minutes=2)
        )
        self.assertIn('kind="supervisor"', self.text())
        with override_settings(ROBUST_QUEUE={"process_alive_threshold": 60}):
            self.assertNotIn('kind="supervisor"', self.text())

    def test_counters_and_histograms_from_the_statistics(self) -> None:
        text = self.text()
        add = 'queue="default",task="testproject.tasks.add"'
        fail = 'queue="default",task="testproject.tasks.fail"'
        self.assertEqual(sample(text, f"robust_queue_jobs_finished_total{{{add}}}"), 1)
        self.assertEqual(sample(text, f"robust_queue_jobs_failed_total{{{fail}}}"), 1)
        self.assertEqual(sample(text, f"robust_queue_jobs_retried_total{{{fail}}}"), 0)
        self.assertEqual(sample(text, f'robust_queue_job_run_seconds_bucket{{{add},le="+Inf"}}'), 1)
        self.assertEqual(sample(text, f"robust_queue_job_wait_seconds_count{{{fail}}}"), 1)
        self.assertGreaterEqual(sample(text, f"robust_queue_job_run_seconds_sum{{{add}}}"), 0)

    def test_the_command_prints_the_same_families(self) -> None:
        out = io.StringIO()
        call_command("robust_queue_metrics", stdout=out)
        printed = out.getvalue()
        names = re.compile(r"^# TYPE (\S+)", re.M)
        self.assertEqual(names.findall(printed), names.findall(self.text()))
        self.assertIn('robust_queue_jobs{queue="reports",state="ready"} 2', printed)

    def test_robust_queue_metrics_runs_that_command(self) -> None:
        """``manage.py robust_queue metrics`` (run_from_argv closes the test's
        connections, so the routing is checked, not a second run)."""
        self.assertIs(SUBCOMMANDS["metrics"], MetricsCommand)


class PerQueueReadyTests(TestCase):
    """Ready counts and latency are read per queue, each count capped on
    its own: a small queue behind a big one is counted and timed."""

    @classmethod
    def setUpTestData(cls) -> None:
        for n in range(5):
            tasks.add.using(queue_name="bulk").enqueue(n, n)
        tasks.add.using(queue_name="mail").enqueue(1, 1)
        tasks.add.using(queue_name="idle").using(
            run_after=timezone.now() + timedelta(hours=1)
        ).enqueue(1, 1)

    def test_a_small_queue_behind_a_big_one_gets_a_count_and_a_latency(self) -> None:
        text = render(collect("default", cap=3))
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="bulk",state="ready"}'), 3)
        self.assertEqual(
            sample(text, 'robust_queue_jobs_count_capped{queue="bulk",state="ready"}'), 1
        )
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="mail",state="ready"}'), 1)
        self.assertEqual(
            sample(text, 'robust_queue_jobs_count_capped{queue="mail",state="ready"}'), 0
        )
        for queue in ("bulk", "mail"):
            with self.subTest(queue=queue):
                latency = sample(text, f'robust_queue_queue_latency_seconds{{queue="{queue}"}}')
                self.assertGreaterEqual(latency, 0)
        self.assertEqual(sample(text, 'robust_queue_jobs_capped{state="ready"}'), 1)

    def test_a_known_queue_without_ready_jobs_reads_zero(self) -> None:
        """A queue known from its scheduled job: 0 ready, latency 0."""
        text = render(collect("default"))
        self.assertEqual(sample(text, 'robust_queue_jobs{queue="idle",state="ready"}'), 0)
        self.assertEqual(sample(text, 'robust_queue_queue_latency_seconds{queue="idle"}'), 0)
        self.assertEqual(
            sample(text, 'robust_queue_jobs_count_capped{queue="bulk",state="ready"}'), 0
        )

    def test_the_latency_is_the_oldest_ready_jobs_age(self) -> None:
        """By the database's clock: a job made ready an hour ago reads ~3600 s."""
        ReadyExecution.objects.filter(job__queue_name="mail").update(
            created_at=timezone.now() - timedelta(hours=1)
        )
        latency = sample(
            render(collect("default")), 'robust_queue_queue_latency_seconds{queue="mail"}'
        )
        self.assertGreater(latency, 3500)
        self.assertLess(latency, 3700)
