"""The recurring tasks page: schedule, next run, last enqueued, run now."""

from __future__ import annotations

from datetime import UTC, datetime

from django.urls import reverse
from django.utils import timezone

from robust_queue.admin.recurring.task_admin import next_run
from robust_queue.models import Job, RecurringExecution, RecurringTask
from tests.integration.admin.base import AdminTestCase


class RecurringPageTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.task = RecurringTask.objects.create(
            key="nightly-report",
            schedule="0 3 * * *",
            task_path="testproject.tasks.report",
            arguments={"args": [4], "kwargs": {}},
            queue_name="reports",
            priority=5,
        )
        cls.last = datetime(2026, 1, 2, 3, 0, tzinfo=UTC)
        RecurringExecution.objects.create(task_key="nightly-report", run_at=cls.last)

    def test_lists_schedule_next_run_and_last_enqueued(self) -> None:
        self.login(self.viewer)
        response = self.client.get(reverse("admin:robust_queue_recurringtask_changelist"))
        self.assertContains(response, "nightly-report")
        self.assertContains(response, "0 3 * * *")
        row = response.context["cl"].result_list[0]
        self.assertEqual(row.last_enqueued, self.last)

    def test_next_run(self) -> None:
        after = datetime(2026, 1, 2, 4, 0, tzinfo=UTC)
        self.assertEqual(next_run("0 3 * * *", after), datetime(2026, 1, 3, 3, 0, tzinfo=UTC))
        self.assertIsNone(next_run("not cron"))

    def test_run_now_enqueues_with_the_task_options(self) -> None:
        self.login()
        before = timezone.now()
        response = self.client.post(
            reverse("admin:robust_queue_recurringtask_run", args=[self.task.pk])
        )
        self.assertEqual(response.status_code, 302)
        job = Job.objects.get(task_path="testproject.tasks.report", enqueued_at__gte=before)
        self.assertEqual((job.queue_name, job.priority, job.args), ("reports", 5, [4]))

    def test_run_now_of_a_task_that_does_not_resolve_says_why(self) -> None:
        RecurringTask.objects.filter(pk=self.task.pk).update(task_path="os.system")
        self.login()
        response = self.client.post(
            reverse("admin:robust_queue_recurringtask_run", args=[self.task.pk]), follow=True
        )
        self.assertContains(response, "could not enqueue")


class RecurringMessageTests(AdminTestCase):
    def test_the_message_keeps_the_keys_case_and_links_the_job(self) -> None:
        task = RecurringTask.objects.create(
            key="nightly-report",
            schedule="0 3 * * *",
            task_path="testproject.tasks.report",
            arguments={"args": [4], "kwargs": {}},
        )
        self.login()
        response = self.client.post(
            reverse("admin:robust_queue_recurringtask_run", args=[task.pk]), follow=True
        )
        job = Job.objects.filter(task_path="testproject.tasks.report").latest("pk")
        self.assertContains(response, "Recurring task nightly-report: enqueued as")
        self.assertContains(
            response, f'<a href="{reverse("admin:robust_queue_job_change", args=[job.pk])}">'
        )
        # A scheduled run's job is linked from the list.
        RecurringExecution.objects.create(task_key=task.key, run_at=timezone.now(), job=job)
        page = self.client.get(reverse("admin:robust_queue_recurringtask_changelist"))
        self.assertContains(page, f">job #{job.pk}</a>")


class RecurringAuditTests(AdminTestCase):
    def test_run_now_is_in_the_audit_trail_of_the_task_and_of_its_job(self) -> None:
        from django.contrib.admin.models import LogEntry

        task = RecurringTask.objects.create(
            key="Hourly-Sync",
            schedule="0 * * * *",
            task_path="testproject.tasks.report",
            arguments={"args": [1], "kwargs": {}},
        )
        self.login()
        self.client.post(reverse("admin:robust_queue_recurringtask_run", args=[task.pk]))
        job = Job.objects.filter(task_path="testproject.tasks.report").latest("pk")
        message = f"Ran recurring task Hourly-Sync now: job #{job.pk}."
        about_task = LogEntry.objects.get(
            object_id=str(task.pk), content_type__model="recurringtask"
        )
        self.assertEqual((about_task.user, about_task.change_message), (self.superuser, message))
        about_job = LogEntry.objects.get(object_id=str(job.pk), content_type__model="job")
        self.assertEqual(about_job.change_message, message)
        self.assertContains(
            self.client.get(reverse("admin:robust_queue_job_change", args=[job.pk])), message
        )
        history = reverse("admin:robust_queue_recurringtask_history", args=[task.pk])
        self.assertContains(self.client.get(history), message)
