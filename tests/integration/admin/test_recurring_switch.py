"""Enabling / disabling a recurring task from the admin, with permission."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse

from robust_queue.models import Job, RecurringExecution, RecurringTask
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, make_staff

CHANGELIST = "admin:robust_queue_recurringtask_changelist"


def switch_url(task: RecurringTask, verb: str) -> str:
    return reverse("admin:robust_queue_recurringtask_switch", args=[task.pk, verb])


class RecurringSwitchTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.task = RecurringTask.objects.create(
            key="Nightly-report",
            schedule="0 3 * * *",
            task_path="testproject.tasks.report",
            arguments={"args": [4], "kwargs": {}},
        )
        cls.toggler = make_staff("toggler", "view_recurringtask", "toggle_recurringtask")

    def test_a_user_with_the_permission_disables_and_enables(self) -> None:
        self.login(self.toggler)
        page = self.client.get(reverse(CHANGELIST))
        self.assertContains(page, switch_url(self.task, "disable"))
        response = self.client.post(switch_url(self.task, "disable"), follow=True)
        self.assertContains(response, "Recurring task Nightly-report: disabled.")
        self.task.refresh_from_db()
        self.assertIs(self.task.enabled, False)
        self.assertContains(response, switch_url(self.task, "enable"))
        self.assertContains(response, "— (disabled)")
        self.client.post(switch_url(self.task, "enable"))
        self.task.refresh_from_db()
        self.assertIs(self.task.enabled, True)

    def test_each_switch_writes_a_log_entry_on_the_task(self) -> None:
        self.login(self.toggler)
        self.client.post(switch_url(self.task, "disable"))
        self.client.post(switch_url(self.task, "disable"))  # no change: no entry
        self.client.post(switch_url(self.task, "enable"))
        entries = LogEntry.objects.filter(
            content_type=ContentType.objects.get_for_model(RecurringTask),
            object_id=str(self.task.pk),
        ).order_by("pk")
        self.assertEqual(
            [(e.user_id, e.change_message) for e in entries],
            [
                (self.toggler.pk, "Recurring task Nightly-report disabled."),
                (self.toggler.pk, "Recurring task Nightly-report enabled."),
            ],
        )

    def test_a_view_only_user_sees_no_switch_and_a_forged_post_is_refused(self) -> None:
        self.login(self.viewer)
        page = self.client.get(reverse(CHANGELIST))
        self.assertNotContains(page, switch_url(self.task, "disable"))
        self.assertNotContains(page, "disable_selected")
        detail = self.client.get(
            reverse("admin:robust_queue_recurringtask_change", args=[self.task.pk])
        )
        self.assertNotContains(detail, switch_url(self.task, "disable"))
        self.assertEqual(self.client.post(switch_url(self.task, "disable")).status_code, 403)
        forged = self.client.post(
            reverse(CHANGELIST),
            {"action": "disable_selected", "_selected_action": [self.task.pk]},
        )
        self.assertEqual(forged.status_code, 403)
        self.task.refresh_from_db()
        self.assertIs(self.task.enabled, True)
        self.assertFalse(LogEntry.objects.exists())

    def test_run_now_permission_does_not_open_the_switch(self) -> None:
        runner = make_staff("runner", "view_recurringtask", "run_job_now")
        self.client.force_login(runner)
        self.assertEqual(self.client.post(switch_url(self.task, "disable")).status_code, 403)

    def test_the_switch_needs_post_and_a_known_verb(self) -> None:
        self.login(self.toggler)
        self.assertEqual(self.client.get(switch_url(self.task, "disable")).status_code, 405)
        self.assertEqual(self.client.post(switch_url(self.task, "pause")).status_code, 404)

    def test_the_bulk_actions_switch_the_selected_tasks(self) -> None:
        self.login(self.toggler)
        self.client.post(
            reverse(CHANGELIST),
            {"action": "disable_selected", "_selected_action": [self.task.pk]},
        )
        self.task.refresh_from_db()
        self.assertIs(self.task.enabled, False)

    def test_the_page_switches_back_to_itself(self) -> None:
        self.login(self.toggler)
        detail_url = reverse("admin:robust_queue_recurringtask_change", args=[self.task.pk])
        detail = self.client.get(detail_url)
        self.assertContains(detail, f"{switch_url(self.task, 'disable')}?back=change")
        response = self.client.post(f"{switch_url(self.task, 'disable')}?back=change")
        self.assertRedirects(response, detail_url)


class RecurringRunsTests(AdminTestCase):
    def test_the_page_shows_the_last_runs_with_their_status_and_the_next_run(self) -> None:
        task = RecurringTask.objects.create(
            key="every-minute",
            schedule="* * * * *",
            task_path="testproject.tasks.add",
            arguments={"args": [1, 2], "kwargs": {}},
        )
        finished = task.enqueue(datetime(2026, 1, 1, 3, 0, tzinfo=UTC))
        work_off()
        failed = Job.objects.get(result_id=tasks.fail.enqueue("x").id)
        work_off()
        RecurringExecution.objects.create(
            task_key="every-minute",
            run_at=datetime(2026, 1, 1, 3, 1, tzinfo=UTC),
            job=failed,
        )
        RecurringExecution.objects.create(
            task_key="every-minute",
            run_at=datetime(2025, 1, 1, 3, 1, tzinfo=UTC),
        )
        self.login(self.viewer)
        detail = self.client.get(reverse("admin:robust_queue_recurringtask_change", args=[task.pk]))
        assert finished is not None
        job_url = reverse("admin:robust_queue_job_change", args=[finished.pk])
        self.assertContains(detail, f'<a href="{job_url}">#{finished.pk}</a>')
        self.assertContains(detail, '<span class="rq-state rq-state-finished">Finished</span>')
        self.assertContains(detail, '<span class="rq-state rq-state-failed">Failed</span>')
        self.assertContains(detail, "cleared")
        # The next slot of "* * * * *" is under a minute away.
        self.assertRegex(detail.content.decode(), r">in \d+ s<")
        listing = self.client.get(reverse(CHANGELIST))
        self.assertContains(listing, '<span class="rq-state rq-state-failed">Failed</span>')

    def test_a_disabled_task_shows_no_next_run(self) -> None:
        task = RecurringTask.objects.create(
            key="off", schedule="0 3 * * *", task_path="testproject.tasks.add", enabled=False
        )
        self.login(self.viewer)
        detail = self.client.get(reverse("admin:robust_queue_recurringtask_change", args=[task.pk]))
        self.assertContains(detail, "— (disabled)")
        self.assertContains(detail, "Never run by a scheduler.")
