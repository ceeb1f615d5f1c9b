"""Runtime schedules in the admin: added, changed and deleted with Django's
permissions and the audit trail; declared rows read-only; view-only staff
and forged POSTs refused."""

from __future__ import annotations

import warnings
from datetime import timedelta
from typing import Any

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.test import TestCase
from django.urls import reverse

from robust_queue.models import QueueAction, RecurringTask
from robust_queue.operations.schedules import add_schedule
from tests.integration.admin.base import make_staff

ADD = reverse("admin:robust_queue_recurringtask_add")
CHANGELIST = reverse("admin:robust_queue_recurringtask_changelist")
EDITOR = ("view_recurringtask", "add_recurringtask", "change_recurringtask")


def change_url(row: RecurringTask) -> str:
    return reverse("admin:robust_queue_recurringtask_change", args=[row.pk])


def delete_url(row: RecurringTask) -> str:
    return reverse("admin:robust_queue_recurringtask_delete", args=[row.pk])


def form(**fields: Any) -> dict[str, Any]:
    data = {
        "key": "every-minute",
        "task_path": "testproject.tasks.add",
        "schedule": "* * * * *",
        "interval": "",
        "time_zone": "",
        "args": "[1, 2]",
        "kwargs": "",
        "queue_name": "",
        "priority": "",
        "description": "",
    }
    return {**data, **fields}


class ScheduleAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.editor = make_staff("editor", *EDITOR, "delete_recurringtask")
        cls.viewer = make_staff("viewer", "view_recurringtask")
        cls.declared = RecurringTask.objects.create(
            key="declared", schedule="0 3 * * *", task_path="testproject.tasks.add"
        )
        cls.runtime = add_schedule(
            "runtime", "testproject.tasks.echo", every=60, kwargs={"password": "hunter2"}
        )

    def test_an_editor_adds_a_schedule_with_its_audit_entries(self) -> None:
        self.client.force_login(self.editor)
        self.assertContains(self.client.get(CHANGELIST), ADD)
        page = self.client.get(ADD)
        self.assertContains(page, '<option value="testproject.tasks.add">')
        self.assertNotContains(page, "robust_queue.admin.bulk_task")  # the queue's own
        fields = form(time_zone="Europe/Paris", kwargs="{}", priority="4")
        response = self.client.post(ADD, fields)
        self.assertRedirects(response, CHANGELIST)
        row = RecurringTask.objects.get(key="every-minute")
        self.assertEqual((row.static, row.enabled, row.time_zone), (False, True, "Europe/Paris"))
        self.assertEqual((row.arguments, row.priority), ({"args": [1, 2], "kwargs": {}}, 4))
        entry = LogEntry.objects.get(object_id=str(row.pk), action_flag=ADDITION)
        self.assertEqual(entry.user_id, self.editor.pk)
        action = QueueAction.objects.get(verb="add schedule")
        self.assertEqual(action.username, "editor")
        self.assertEqual(
            action.message,
            "Schedule every-minute added (testproject.tasks.add, * * * * * (Europe/Paris)).",
        )

    def test_a_bad_schedule_is_shown_with_its_problems_and_writes_nothing(self) -> None:
        self.client.force_login(self.editor)
        cases = [
            (form(schedule="61 * * * *"), "does not parse"),
            (form(schedule="", interval=""), "give a cron string or an interval"),
            (form(interval="30"), "not both"),
            (form(time_zone="Mars/Base"), "time zone &#x27;Mars/Base&#x27; is unknown"),
            (form(args="{}"), "args must be a list"),
            (form(task_path="os.system"), "Select a valid choice"),
            (form(key="declared"), "is declared in code"),
            (form(key="runtime"), "already exists"),
        ]
        for data, message in cases:
            with self.subTest(message=message):
                self.assertContains(self.client.post(ADD, data), message)
        self.assertEqual(RecurringTask.objects.count(), 2)
        self.assertFalse(QueueAction.objects.exists())

    def test_an_editor_changes_a_runtime_schedule_keeping_masked_arguments(self) -> None:
        self.client.force_login(self.editor)
        page = self.client.get(change_url(self.runtime))
        self.assertNotContains(page, "hunter2")
        self.assertContains(page, "Leave empty to keep the current arguments")
        data = form(key="ignored", task_path="testproject.tasks.echo", schedule="")
        data.update(interval="00:02:00", args="")
        response = self.client.post(change_url(self.runtime), data)
        self.assertRedirects(response, CHANGELIST)
        row = RecurringTask.objects.get(pk=self.runtime.pk)
        self.assertEqual((row.key, row.interval), ("runtime", timedelta(minutes=2)))
        self.assertEqual(row.arguments, {"args": [], "kwargs": {"password": "hunter2"}})
        self.assertTrue(LogEntry.objects.filter(object_id=str(row.pk), action_flag=CHANGE).exists())
        self.assertEqual(QueueAction.objects.get().verb, "change schedule")

    def test_an_editor_deletes_a_runtime_schedule_with_its_audit_entries(self) -> None:
        self.client.force_login(self.editor)
        response = self.client.post(delete_url(self.runtime), {"post": "yes"})
        self.assertRedirects(response, CHANGELIST)
        self.assertFalse(RecurringTask.objects.filter(key="runtime").exists())
        self.assertTrue(LogEntry.objects.filter(action_flag=DELETION).exists())
        self.assertEqual(QueueAction.objects.get().verb, "delete schedule")

    def test_declared_rows_stay_read_only_even_for_a_superuser(self) -> None:
        self.client.force_login(make_staff("root-ish", *EDITOR, "delete_recurringtask"))
        page = self.client.get(change_url(self.declared))
        self.assertNotContains(page, 'name="schedule"')
        self.assertContains(page, "0 3 * * *")
        forged = form(key="declared", schedule="* * * * *")
        self.assertEqual(self.client.post(change_url(self.declared), forged).status_code, 403)
        self.assertEqual(
            self.client.post(delete_url(self.declared), {"post": "yes"}).status_code, 403
        )
        self.declared.refresh_from_db()
        self.assertEqual(self.declared.schedule, "0 3 * * *")

    def test_bulk_delete_is_not_offered_and_a_forged_one_is_refused(self) -> None:
        self.client.force_login(self.editor)
        with warnings.catch_warnings():
            # Django 6.1 warns about a get_actions() without action_location.
            warnings.simplefilter("error")
            self.assertNotContains(self.client.get(CHANGELIST), "delete_selected")
        data = {"action": "delete_selected", "_selected_action": [self.declared.pk], "post": "yes"}
        self.assertEqual(self.client.post(CHANGELIST, data).status_code, 403)
        self.assertTrue(RecurringTask.objects.filter(pk=self.declared.pk).exists())

    def test_view_only_staff_see_but_cannot_add_change_or_delete(self) -> None:
        self.client.force_login(self.viewer)
        self.assertNotContains(self.client.get(CHANGELIST), ADD)
        page = self.client.get(change_url(self.runtime))
        self.assertEqual(page.status_code, 200)
        self.assertNotContains(page, 'name="schedule"')
        self.assertNotContains(page, "hunter2")
        self.assertEqual(self.client.post(ADD, form()).status_code, 403)
        changed = form(key="runtime", schedule="@daily", interval="")
        self.assertEqual(self.client.post(change_url(self.runtime), changed).status_code, 403)
        self.assertEqual(
            self.client.post(delete_url(self.runtime), {"post": "yes"}).status_code, 403
        )
        self.assertEqual(RecurringTask.objects.count(), 2)
        self.assertEqual(RecurringTask.objects.get(key="runtime").interval, timedelta(minutes=1))
        self.assertFalse(QueueAction.objects.exists())

    def test_the_changelist_shows_each_schedule_as_it_runs(self) -> None:
        self.client.force_login(self.viewer)
        page = self.client.get(CHANGELIST)
        self.assertContains(page, "every 1 minute")
        self.assertContains(page, "0 3 * * *")
        content_type = ContentType.objects.get_for_model(RecurringTask)
        self.assertFalse(LogEntry.objects.filter(content_type=content_type).exists())
