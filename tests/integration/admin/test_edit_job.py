"""Editing a waiting job from its page: the form, only changed fields
written, clear errors, its permission and its audit entry."""

from __future__ import annotations

from datetime import timedelta

from cryptography.fernet import Fernet
from django.contrib.admin.models import LogEntry
from django.test import override_settings
from django.utils import timezone

from robust_queue.models import Job, QueueAction, ReadyExecution, ScheduledExecution
from testproject import encrypted_tasks, tasks
from tests.integration.admin.base import VIEW_PERMISSIONS, AdminTestCase, job_url, make_staff
from tests.integration.admin.test_actions import messages_of

EDIT_LINK = 'id="rq-edit-link"'


def _post(job: Job, **fields: object) -> dict[str, object]:
    """The form as the page fills it for ``job``, with ``fields`` changed."""
    job = Job.objects.get(pk=job.pk)
    run_after = job.run_after and timezone.localtime(job.run_after).strftime("%Y-%m-%dT%H:%M")
    data: dict[str, object] = {
        "args": "[" + ", ".join(str(a).lower() for a in job.args) + "]",
        "kwargs": "{}",
        "priority": job.priority,
        "queue_name": job.queue_name,
        "run_after": run_after or "",
        "tags": ", ".join(job.tag_names()),
    }
    return {**data, **fields}


class EditPageTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def test_the_page_shows_the_jobs_values_and_a_post_edits_it(self) -> None:
        page = self.client.get(job_url("action", self.ready.pk, "edit"))
        self.assertContains(page, 'id="rq-edit-job"')
        self.assertContains(page, 'name="queue_name" value="reports"')
        self.assertContains(page, "[3]</textarea>")
        data = _post(self.ready, args="[12]", priority="-3", queue_name="urgent", tags="a, b")
        response = self.client.post(job_url("action", self.ready.pk, "edit"), data, follow=True)
        self.assertIn(
            f"Job #{self.ready.pk} was edited: args, priority, queue_name, tags.",
            messages_of(response),
        )
        job = Job.objects.get(pk=self.ready.pk)
        self.assertEqual((job.args, job.priority, job.queue_name), ([12], -3, "urgent"))
        self.assertEqual(job.tag_names(), ["a", "b"])
        ready = ReadyExecution.objects.get(job=job)
        self.assertEqual((ready.priority, ready.queue_name), (-3, "urgent"))

    def test_an_edit_is_audited_without_the_values(self) -> None:
        data = _post(self.ready, args="[99]")
        self.client.post(job_url("action", self.ready.pk, "edit"), data)
        entry = LogEntry.objects.get(object_id=str(self.ready.pk))
        self.assertEqual(
            entry.change_message, f"Edited job #{self.ready.pk} (testproject.tasks.report): args."
        )
        action = QueueAction.objects.get()
        self.assertEqual((action.verb, action.count, action.job_id), ("edit", 1, self.ready.pk))
        self.assertNotIn("99", action.message)
        detail = self.client.get(job_url("change", self.ready.pk))
        self.assertContains(detail, "Edited job")

    def test_an_unchanged_form_writes_nothing(self) -> None:
        response = self.client.post(
            job_url("action", self.scheduled.pk, "edit"), _post(self.scheduled), follow=True
        )
        self.assertIn("no field differs", " ".join(messages_of(response)))
        self.assertFalse(QueueAction.objects.exists())
        before = ScheduledExecution.objects.get(job=self.scheduled).scheduled_at
        self.assertEqual(Job.objects.get(pk=self.scheduled.pk).run_after, before)

    def test_a_new_run_after_moves_a_scheduled_job(self) -> None:
        at = timezone.localtime() + timedelta(days=2)
        data = _post(self.scheduled, run_after=at.strftime("%Y-%m-%dT%H:%M"))
        self.client.post(job_url("action", self.scheduled.pk, "edit"), data)
        row = ScheduledExecution.objects.get(job=self.scheduled)
        self.assertEqual(row.scheduled_at, at.replace(second=0, microsecond=0))
        self.client.post(
            job_url("action", self.scheduled.pk, "edit"), _post(self.scheduled, run_after="")
        )
        self.assertTrue(ReadyExecution.objects.filter(job=self.scheduled).exists())

    def test_bad_input_is_a_clear_error_and_writes_nothing(self) -> None:
        cases = [
            ({"args": "[1, 2"}, "Not valid JSON"),
            ({"args": '{"a": 1}'}, "Must be a JSON list, not dict."),
            ({"kwargs": "[1]"}, "Must be a JSON object, not list."),
            ({"priority": "101"}, "less than or equal to 100"),
            ({"queue_name": "no spaces"}, "Queue name &#x27;no spaces&#x27; is invalid"),
            ({"args": '[{"__rq__": "nope", "v": 1}]'}, "nope"),
            ({"tags": "x" * 101}, "is not a string of 1 to 100 characters"),
        ]
        before = Job.objects.get(pk=self.ready.pk).arguments
        for fields, message in cases:
            with self.subTest(fields=fields):
                data = _post(self.ready, **fields)
                response = self.client.post(job_url("action", self.ready.pk, "edit"), data)
                self.assertEqual(response.status_code, 200)
                self.assertContains(response, message)
        job = Job.objects.get(pk=self.ready.pk)
        self.assertEqual((job.arguments, job.queue_name, job.tag_names()), (before, "reports", []))
        self.assertFalse(QueueAction.objects.exists())

    def test_a_job_that_started_or_ended_is_refused(self) -> None:
        for job, why in ((self.running, "is running"), (self.finished, "has finished")):
            with self.subTest(job=job.pk):
                data = _post(job, priority="5")
                response = self.client.post(job_url("action", job.pk, "edit"), data, follow=True)
                self.assertIn(why, " ".join(messages_of(response)))
                self.assertEqual(Job.objects.get(pk=job.pk).priority, job.priority)

    def test_the_page_of_a_job_that_is_not_waiting_sends_back_with_a_reason(self) -> None:
        response = self.client.get(job_url("action", self.running.pk, "edit"), follow=True)
        self.assertIn(
            f"Job #{self.running.pk} is running: only a waiting (ready, scheduled or blocked) "
            "job can be edited.",
            messages_of(response),
        )
        self.assertNotContains(response, 'id="rq-edit-job"')

    def test_the_button_shows_for_waiting_jobs_only(self) -> None:
        for job in (self.ready, self.scheduled, self.blocked):
            with self.subTest(job=job.pk):
                self.assertContains(self.client.get(job_url("change", job.pk)), EDIT_LINK)
        for job in (self.running, self.finished, self.failed):
            with self.subTest(job=job.pk):
                self.assertNotContains(self.client.get(job_url("change", job.pk)), EDIT_LINK)


class EditPermissionTests(AdminTestCase):
    def test_view_only_staff_see_no_button_and_get_403(self) -> None:
        self.login(self.viewer)
        self.assertNotContains(self.client.get(job_url("change", self.ready.pk)), EDIT_LINK)
        url = job_url("action", self.ready.pk, "edit")
        self.assertEqual(self.client.get(url).status_code, 403)
        self.assertEqual(self.client.post(url, _post(self.ready, priority="9")).status_code, 403)
        self.assertEqual(Job.objects.get(pk=self.ready.pk).priority, self.ready.priority)

    def test_the_edit_permission_is_enough(self) -> None:
        editor = make_staff("editor", *VIEW_PERMISSIONS, "edit_job")
        self.login(editor)
        self.assertContains(self.client.get(job_url("change", self.ready.pk)), EDIT_LINK)
        self.client.post(job_url("action", self.ready.pk, "edit"), _post(self.ready, priority="9"))
        self.assertEqual(Job.objects.get(pk=self.ready.pk).priority, 9)


class MaskedArgumentsTests(AdminTestCase):
    def test_masked_arguments_are_shown_masked_and_kept(self) -> None:
        result = tasks.echo.enqueue(password="hunter2", n=1)
        job = Job.objects.get(result_id=result.id)
        self.login()
        page = self.client.get(job_url("action", job.pk, "edit"))
        self.assertContains(page, 'id="rq-edit-masked"')
        self.assertNotContains(page, "hunter2")
        self.assertNotContains(page, 'name="kwargs"')
        data = _post(job, kwargs='{"password": "x"}', priority="4")
        self.client.post(job_url("action", job.pk, "edit"), data)
        job = Job.objects.get(pk=job.pk)
        self.assertEqual((job.priority, job.kwargs), (4, {"password": "hunter2", "n": 1}))


@override_settings(
    ROBUST_QUEUE={
        "encryption_keys": [Fernet.generate_key().decode()],
        "task_modules": [encrypted_tasks.__name__],
    }
)
class EncryptedArgumentsPageTests(AdminTestCase):
    def test_encrypted_arguments_are_not_shown_nor_editable(self) -> None:
        result = encrypted_tasks.record_card.enqueue("4111-secret", amount=3)
        job = Job.objects.get(result_id=result.id)
        self.login()
        page = self.client.get(job_url("action", job.pk, "edit"))
        self.assertContains(page, 'id="rq-edit-masked"')
        self.assertNotContains(page, "4111")
        self.assertNotContains(page, 'name="args"')
        self.client.post(job_url("action", job.pk, "edit"), _post(job, priority="6"))
        self.assertEqual(Job.objects.get(pk=job.pk).priority, 6)
        got = encrypted_tasks.record_card.get_result(result.id)
        self.assertEqual((got.args, got.kwargs), (["4111-secret"], {"amount": 3}))
