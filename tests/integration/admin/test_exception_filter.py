"""The failed list of one exception class reads the ``(class, id)`` index
of migration 0024 on every database that has one: on MariaDB the query
names the generated column (MariaDB does not match the JSON expression to
it: the list read all 500,000 failures at 10M jobs, 5.3 s; BENCHMARKS.md,
"Admin at 10M jobs on MariaDB"). The column holds a class path's first 255
characters: longer paths that share them are still told apart."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.models import FailedExecution, Job
from robust_queue.models.sql import failure_search
from tests.integration.admin.base import AdminTestCase, changelist

LONG = "app." + "deeply_nested." * 20  # 284 characters
SHORT = "billing.gateway.TimeoutError"


class ExceptionFilterTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.by_class = {
            name: _failed(name) for name in (SHORT, f"{LONG}FirstError", f"{LONG}SecondError")
        }

    def test_each_class_lists_its_own_failures(self) -> None:
        self.assertGreater(len(LONG), failure_search.CLASS_LENGTH)
        self.login(self.viewer)
        for name, job in self.by_class.items():
            with self.subTest(name=name[-20:]):
                response = self.client.get(changelist(state="failed", exception=name))
                self.assertEqual([j.pk for j in response.context["cl"].result_list], [job.pk])

    def test_a_class_differing_in_case_is_another(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", exception=SHORT.lower()))
        self.assertEqual(list(response.context["cl"].result_list), [])

    def test_mariadb_reads_the_generated_column(self) -> None:
        if connection.vendor != "mysql":
            self.skipTest("MariaDB's generated column")
        self.login(self.viewer)
        with CaptureQueriesContext(connection) as queries:
            self.client.get(changelist(state="failed", exception=SHORT))
        filtered = [
            query["sql"]
            for query in queries.captured_queries
            if f"'{SHORT}'" in query["sql"] and "robust_queue_job" in query["sql"]
        ]
        self.assertTrue(filtered)
        for sql in filtered:
            self.assertIn(f".{failure_search.CLASS_COLUMN} = '{SHORT}'", sql)


def _failed(exception_class: str) -> Job:
    job = Job.objects.create(
        result_id=f"exception-{exception_class[-12:]}",
        task_path="testproject.tasks.fail",
        queue_name="default",
        backend_alias="default",
        arguments={"args": [], "kwargs": {}},
        enqueued_at=timezone.now(),
    )
    FailedExecution.objects.create(
        job=job,
        error={"exception_class_path": exception_class, "traceback": "Traceback ..."},
    )
    return job
