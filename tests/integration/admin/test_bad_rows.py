"""Every admin page renders whatever is in the tables, written by hand."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from robust_queue.models import (
    FailedExecution,
    Job,
    Pause,
    Process,
    ReadyExecution,
    RecurringTask,
)
from testproject import tasks
from tests.integration.admin.base import AdminTestCase, changelist, job_url

CANNOT_DECODE = "cannot decode"
MALFORMED_ARGUMENTS: list[Any] = [
    "not an object",
    [1, 2, 3],
    {"args": 5, "kwargs": []},
    {"args": {"a": 1}, "kwargs": "x"},
    {"args": [{"__rq__": "datetime", "v": "not a date"}], "kwargs": {}},
    {"args": [{"__rq__": "no-such-tag", "v": 1}], "kwargs": {}},
    {"args": [], "kwargs": {"when": {"__rq__": "dict", "v": [1]}}},
    {"args": [{"__rq__": "timedelta", "v": [1]}], "kwargs": {}},
]


class BadRowTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def _assert_pages_render(self, job: Job) -> None:
        for url in (
            changelist(),
            changelist(state="failed"),
            job_url("change", job.pk),
            reverse("admin:robust_queue_overview"),
            reverse("admin:robust_queue_concurrency"),
            reverse("admin:robust_queue_process_changelist"),
        ):
            with self.subTest(url=url):
                self.assertEqual(self.client.get(url).status_code, 200)

    def test_a_job_with_no_execution_row(self) -> None:
        """The list shows the orphan; its page says it has no state."""
        ReadyExecution.objects.filter(job=self.ready).delete()
        response = self.client.get(changelist())
        self.assertEqual(response.status_code, 200)
        self.assertEqual(len(response.context["cl"].result_list), 6)
        self.assertContains(response, "No state")
        page = self.client.get(job_url("change", self.ready.pk))
        self.assertContains(page, "No state")
        self.assertNotContains(page, ">Retry</button>")
        self._assert_pages_render(self.ready)

    def test_malformed_arguments_say_cannot_decode(self) -> None:
        for arguments in MALFORMED_ARGUMENTS:
            with self.subTest(arguments=arguments):
                Job.objects.filter(pk=self.failed.pk).update(arguments=arguments)
                page = self.client.get(job_url("change", self.failed.pk))
                self.assertEqual(page.status_code, 200)
                self.assertContains(page, CANNOT_DECODE)

    def test_malformed_arguments_with_masking_on(self) -> None:
        with self.settings(ROBUST_QUEUE={"admin_mask": ["password"]}):
            for arguments in MALFORMED_ARGUMENTS:
                with self.subTest(arguments=arguments):
                    Job.objects.filter(pk=self.failed.pk).update(arguments=arguments)
                    page = self.client.get(job_url("change", self.failed.pk))
                    self.assertContains(page, CANNOT_DECODE)

    def test_malformed_errors_worker_ids_and_return_value(self) -> None:
        for errors, worker_ids in [
            ("text", {"a": 1}),
            ([1, None, "x", {"traceback": 5}], 7),
            ({"exception_class_path": "x"}, [None, 3]),
        ]:
            with self.subTest(errors=errors, worker_ids=worker_ids):
                Job.objects.filter(pk__in=[self.failed.pk, self.finished.pk]).update(
                    errors=errors, worker_ids=worker_ids, return_value={"__rq__": "x"}
                )
                self._assert_pages_render(self.failed)
                page = self.client.get(job_url("change", self.finished.pk))
                self.assertEqual(page.status_code, 200)

    def test_malformed_failed_execution_error(self) -> None:
        for error in ("text", [1, 2], {"exception_class_path": 5}):
            with self.subTest(error=error):
                FailedExecution.objects.filter(job=self.failed).update(error=error)
                self._assert_pages_render(self.failed)

    def test_malformed_process_metadata(self) -> None:
        for metadata in ("text", [1, 2], {"queues": {"a": 1}, "threads": [1]}):
            with self.subTest(metadata=metadata):
                Process.objects.filter(pk=self.process.pk).update(metadata=metadata)
                response = self.client.get(reverse("admin:robust_queue_process_changelist"))
                self.assertEqual(response.status_code, 200)

    def test_a_lone_surrogate_in_a_traceback(self) -> None:
        """JSON may escape a lone surrogate; the page escapes it again."""
        if connection.vendor != "sqlite":
            self.skipTest("jsonb and MariaDB's JSON check refuse a lone surrogate escape")
        error = '{"exception_class_path": "x.Bad\\ud800", "traceback": "Boom \\udc80 here"}'
        table = Job._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET errors = %s, worker_ids = %s WHERE id = %s",
                [f"[{error}]", '["w\\ud800"]', self.failed.pk],
            )
            cursor.execute(
                f"UPDATE {FailedExecution._meta.db_table} SET error = %s WHERE job_id = %s",
                [error, self.failed.pk],
            )
        page = self.client.get(job_url("change", self.failed.pk))
        self.assertContains(page, "Boom \\udc80 here")
        self._assert_pages_render(self.failed)

    def test_a_200_character_queue_name_is_refused(self) -> None:
        name = "q" * 200
        for verb in ("pause", "resume"):
            response = self.client.post(
                reverse("admin:robust_queue_queue", args=[verb]), {"queue": name}
            )
            self.assertEqual(response.status_code, 302)
        self.assertIs(Pause.objects.exists(), False)
        messages = [str(m) for m in self.client.get(changelist()).context["messages"]]
        self.assertIn("cannot be a queue name", " ".join(messages))

    def test_a_queue_with_a_name_outside_the_rule_renders_and_is_not_paused(self) -> None:
        """Old rows may hold any name: the overview renders, and pausing
        such a name is refused with a message (the queue-name rule)."""
        for name in ("a/b", "with space", ""):
            with self.subTest(name=name):
                tasks.add.using(queue_name="reports").enqueue(1, 1)
                Job.objects.filter(queue_name="reports").update(queue_name=name)
                ReadyExecution.objects.filter(queue_name="reports").update(queue_name=name)
                self.assertEqual(
                    self.client.get(reverse("admin:robust_queue_overview")).status_code, 200
                )
                response = self.client.post(
                    reverse("admin:robust_queue_queue", args=["pause"]),
                    {"queue": name},
                    follow=True,
                )
                self.assertEqual(response.status_code, 200)
                self.assertContains(response, "cannot be a queue name")
                self.assertIs(Pause.objects.filter(queue_name=name).exists(), False)

    def test_out_of_range_ids(self) -> None:
        huge = "9" * 26
        response = self.client.get(changelist(state="claimed", process=huge))
        self.assertIn(response.status_code, (200, 302))
        for url in (
            job_url("change", huge),
            reverse("admin:robust_queue_process_change", args=[huge]),
            reverse("admin:robust_queue_recurringtask_change", args=[huge]),
        ):
            with self.subTest(url=url):
                self.assertIn(self.client.get(url).status_code, (302, 404))
        for url in (
            job_url("action", huge, "retry"),
            job_url("action", huge, "discard"),
            reverse("admin:robust_queue_recurringtask_run", args=[huge]),
        ):
            with self.subTest(url=url):
                self.assertEqual(self.client.post(url).status_code, 404)

    def test_malformed_recurring_tasks(self) -> None:
        recurring = RecurringTask.objects.create(
            key="odd", schedule="0 3 * * *", task_path="testproject.tasks.echo"
        )
        for schedule, arguments in [
            ("not a schedule", "text"),
            ("99 99 * * *", [1]),
            ("", {"args": 1, "kwargs": []}),
            ("* * * * * * * *", {"args": [{"__rq__": "x"}], "kwargs": {"a": 1}}),
        ]:
            with self.subTest(schedule=schedule, arguments=arguments):
                RecurringTask.objects.filter(pk=recurring.pk).update(
                    schedule=schedule, arguments=arguments
                )
                for url in (
                    reverse("admin:robust_queue_recurringtask_changelist"),
                    reverse("admin:robust_queue_recurringtask_change", args=[recurring.pk]),
                ):
                    self.assertEqual(self.client.get(url).status_code, 200)


class FacetTests(AdminTestCase):
    """A hand-typed ``_facets`` costs what the page costs: no counts."""

    def test_facets_are_never_counted(self) -> None:
        self.login(self.viewer)
        for url in (
            changelist(state="failed"),
            reverse("admin:robust_queue_process_changelist"),
            reverse("admin:robust_queue_recurringtask_changelist"),
        ):
            with self.subTest(url=url):
                with CaptureQueriesContext(connection) as plain:
                    self.client.get(url)
                with CaptureQueriesContext(connection) as faceted:
                    response = self.client.get(url + ("&" if "?" in url else "?") + "_facets=True")
                self.assertEqual(response.status_code, 200)
                self.assertEqual(len(faceted), len(plain))
                self.assertIs(response.context["cl"].add_facets, False)
                self.assertNotContains(response, "Show counts")
