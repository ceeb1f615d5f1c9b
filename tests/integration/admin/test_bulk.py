"""Bulk actions ask first with the exact count, act within it, and run
large operations on the queue with visible progress."""

from __future__ import annotations

from unittest import mock

from django.contrib.admin.models import LogEntry
from django.core.exceptions import ImproperlyConfigured
from django.test import TestCase
from django.urls import reverse

from robust_queue.admin.jobs import bulk
from robust_queue.models import FailedExecution, Job, ReadyExecution
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim, work_off
from tests.integration.admin.base import AdminTestCase, changelist, job_url
from tests.integration.admin.test_actions import messages_of


class BulkConfirmationTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()
        ids = [tasks.fail.enqueue(f"n{i}").id for i in range(4)]
        work_off()
        self.assertEqual(len(ids), 4)

    def _ask(  # type: ignore[no-untyped-def]
        self, action: str, url: str, selected: list[int], across: bool
    ):
        data = {
            "action": action,
            "_selected_action": selected,
            "index": 0,
            "select_across": int(across),
        }
        return data, self.client.post(url, data)

    def test_select_all_asks_with_the_exact_count_and_changes_nothing(self) -> None:
        _, page = self._ask("discard_selected", changelist(state="failed"), [self.failed.pk], True)
        self.assertEqual(page.status_code, 200)
        self.assertEqual(page.context["count"], 5)
        self.assertContains(page, '<strong id="rq-bulk-count">5</strong>')
        self.assertContains(page, "Yes, discard 5 job(s)")
        self.assertEqual(FailedExecution.objects.count(), 5)

    def test_discarding_everything_counts_every_job_but_the_running_ones(self) -> None:
        _, page = self._ask("discard_selected", changelist(), [self.finished.pk], True)
        running = Job.objects.filter(claimed_execution__isnull=False).count()
        self.assertEqual(running, 1)
        self.assertEqual(page.context["count"], Job.objects.count() - running)
        self.assertEqual(page.context["max_pk"], Job.objects.latest("pk").pk)

    def test_the_count_bounds_the_action(self) -> None:
        data, page = self._ask("retry_selected", changelist(state="failed"), [self.failed.pk], True)
        late = Job.objects.get(result_id=tasks.fail.enqueue("late").id)
        work_off()
        confirmed = {**data, "confirm": "yes", "max_pk": page.context["max_pk"], "count": 5}
        response = self.client.post(changelist(state="failed"), confirmed)
        self.assertIn("Retried 5 of 5 job(s).", messages_of(response))
        self.assertEqual(list(FailedExecution.objects.values_list("job_id", flat=True)), [late.pk])

    def test_run_now_warns_about_blocked_jobs(self) -> None:
        _, page = self._ask(
            "run_selected_now", changelist(), [self.blocked.pk, self.scheduled.pk], False
        )
        self.assertContains(page, 'id="rq-blocked-warning"')
        self.assertContains(page, "outside that limit")

    def test_the_action_is_in_the_audit_trail(self) -> None:
        url = changelist(state="failed")
        data, page = self._ask("retry_selected", url, [self.failed.pk], False)
        self.client.post(
            changelist(state="failed"),
            {**data, "confirm": "yes", "max_pk": page.context["max_pk"], "count": 1},
        )
        entry = LogEntry.objects.get(object_id=None)
        self.assertEqual(entry.user, self.superuser)
        self.assertEqual(entry.change_message, "Retried 1 of 1 job(s).")
        self.assertContains(self.client.get(reverse("admin:index")), "Retried 1 of 1 job(s).")
        # A small action is on each job's page too.
        each = LogEntry.objects.get(object_id=str(self.failed.pk))
        self.assertEqual(each.change_message, "Retry (bulk action): Retried 1 of 1 job(s).")
        page = self.client.get(reverse("admin:robust_queue_job_change", args=[self.failed.pk]))
        self.assertContains(page, "Retry (bulk action): Retried 1 of 1 job(s).")

    def test_thousands_are_grouped(self) -> None:
        self.assertEqual(bulk.number(12345), "12,345")


class BackgroundOperationTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()
        [tasks.fail.enqueue(f"n{i}") for i in range(3)]
        work_off()
        patcher = mock.patch.object(bulk, "BACKGROUND_ABOVE", 2)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_a_large_operation_runs_on_the_queue_with_progress(self) -> None:
        url = changelist(state="failed", task="testproject.tasks.fail")
        data = {
            "action": "retry_selected",
            "_selected_action": [self.failed.pk],
            "index": 0,
            "select_across": 1,
        }
        page = self.client.post(url, data)
        self.assertTrue(page.context["background"])
        response = self.client.post(
            url, {**data, "confirm": "yes", "max_pk": page.context["max_pk"], "count": 4}
        )
        operation = Job.objects.get(task_path="robust_queue.admin.bulk_task.bulk_operation")
        self.assertRedirects(
            response, job_url("change", operation.pk), fetch_redirect_response=False
        )
        self.assertEqual(FailedExecution.objects.count(), 4)  # nothing done in the request
        (row,) = claim(1)
        perform(row)
        operation.refresh_from_db()
        self.assertEqual(operation.return_value, {"changed": 4, "done": 4, "counted": 4})
        self.assertEqual(FailedExecution.objects.count(), 0)
        self.assertEqual(
            ReadyExecution.objects.filter(job__task_path="testproject.tasks.fail").count(), 4
        )
        self.assertEqual(LogEntry.objects.count(), 2)  # asked, and done
        page = self.client.get(job_url("change", operation.pk))
        self.assertContains(page, 'id="rq-operation-progress"')


class AuditTrailTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def test_one_job_actions_are_on_the_job_page_and_in_recent_actions(self) -> None:
        self.client.post(job_url("action", self.failed.pk, "retry"))
        entry = LogEntry.objects.get()
        self.assertEqual((entry.user, entry.object_id), (self.superuser, str(self.failed.pk)))
        page = self.client.get(job_url("change", self.failed.pk))
        self.assertContains(page, f"Retried job #{self.failed.pk}")
        self.client.post(job_url("action", self.finished.pk, "discard"))
        self.assertEqual(LogEntry.objects.filter(action_flag=3).count(), 1)

    def test_pause_and_resume_are_recorded(self) -> None:
        for verb in ("pause", "resume"):
            self.client.post(reverse("admin:robust_queue_queue", args=[verb]), {"queue": "reports"})
        self.assertEqual(
            list(LogEntry.objects.order_by("pk").values_list("change_message", flat=True)),
            ["Paused queue 'reports'.", "Resumed queue 'reports'."],
        )


class RunBlockedJobTests(AdminTestCase):
    def test_run_now_on_a_blocked_job_warns_first(self) -> None:
        self.login()
        page = self.client.get(job_url("change", self.blocked.pk))
        self.assertContains(page, ">Run now…</a>")
        confirm = self.client.get(job_url("action", self.blocked.pk, "run"))
        self.assertContains(confirm, "outside that limit")
        self.assertIs(ReadyExecution.objects.filter(job=self.blocked).exists(), False)
        self.client.post(job_url("action", self.blocked.pk, "run"))
        self.assertIs(ReadyExecution.objects.filter(job=self.blocked).exists(), True)

    def test_a_viewer_cannot_open_the_confirmation(self) -> None:
        self.login(self.viewer)
        response = self.client.get(job_url("action", self.blocked.pk, "run"))
        self.assertEqual(response.status_code, 403)


class ServerSideCountTests(AdminTestCase):
    """The decision to run on the queue rests on the server's own count."""

    def setUp(self) -> None:
        self.login()
        [tasks.fail.enqueue(f"n{i}") for i in range(3)]
        work_off()
        self.url = changelist(state="failed")
        self.data = {
            "action": "retry_selected",
            "_selected_action": [self.failed.pk],
            "index": 0,
            "select_across": 1,
        }

    def test_a_forged_small_count_still_goes_to_the_queue(self) -> None:
        page = self.client.post(self.url, self.data)
        with mock.patch.object(bulk, "BACKGROUND_ABOVE", 2):
            response = self.client.post(
                self.url,
                {**self.data, "confirm": "yes", "max_pk": page.context["max_pk"], "count": 1},
            )
        operation = Job.objects.get(task_path="robust_queue.admin.bulk_task.bulk_operation")
        self.assertRedirects(
            response, job_url("change", operation.pk), fetch_redirect_response=False
        )
        self.assertEqual(FailedExecution.objects.count(), 4)
        self.assertEqual(operation.args[-2:], [4, "admin"])  # counted here; this site

    def test_the_confirmation_count_stops_at_the_cap(self) -> None:
        with mock.patch.object(bulk, "COUNT_CAP", 2):
            page = self.client.post(self.url, self.data)
        self.assertEqual(page.context["count_shown"], "2+")
        self.assertContains(page, 'id="rq-bulk-capped"')


class AdminSiteTests(TestCase):
    def test_the_operation_uses_the_admin_site_it_was_confirmed_on(self) -> None:
        from django.contrib import admin as django_admin

        from robust_queue.admin import JobAdmin, bulk_task

        site = django_admin.AdminSite(name="ops")
        site.register(Job, JobAdmin)
        self.assertIs(bulk_task._job_admin("ops"), site._registry[Job])
        self.assertIs(bulk_task._job_admin("admin"), django_admin.site._registry[Job])
        with self.assertRaisesMessage(ImproperlyConfigured, "No admin site named 'elsewhere'"):
            bulk_task._job_admin("elsewhere")
