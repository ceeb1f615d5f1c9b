"""The job list keeps what the operator chose: tabs, pages, breadcrumbs."""

from __future__ import annotations

from unittest import mock

from django.test import override_settings
from django.urls import reverse

from robust_queue.admin.counting import CappedPaginator
from robust_queue.admin.masking import values as masking
from robust_queue.admin.pages import OL_BREADCRUMBS
from robust_queue.models import FailedExecution, Job
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist, job_url


class StateTabTests(AdminTestCase):
    def test_tabs_keep_the_filters_and_the_search(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", queue="default", q="fail", p="2"))
        tabs = {tab["value"]: tab["query"] for tab in response.context["state_tabs"]}
        self.assertEqual(tabs["ready"], "queue=default&q=fail&state=ready")
        self.assertEqual(tabs[""], "queue=default&q=fail")
        self.assertContains(response, 'href="?queue=default&amp;q=fail&amp;state=finished"')


class PagePastTheCapTests(AdminTestCase):
    """At most ``cap`` jobs are paged; the list says so and keeps filters."""

    def setUp(self) -> None:
        self.login(self.viewer)
        ids = [tasks.fail.enqueue(f"n{i}").id for i in range(5)]
        work_off()
        self.assertEqual(len(ids), 5)
        patcher = mock.patch.object(CappedPaginator, "cap", 4)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_the_last_page_is_the_cap_and_the_list_says_so(self) -> None:
        with mock.patch("robust_queue.admin.jobs.job_admin.JobAdmin.list_per_page", 2):
            response = self.client.get(changelist(state="failed", p="2"))
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.context["cl"].paginator.num_pages, 2)
        self.assertContains(response, "Showing the newest 4 of ")

    def test_a_page_past_the_end_keeps_the_filters(self) -> None:
        with mock.patch("robust_queue.admin.jobs.job_admin.JobAdmin.list_per_page", 2):
            response = self.client.get(changelist(state="failed", queue="default", p="99"))
        self.assertEqual(response.status_code, 200)
        self.assertEqual(len(response.context["cl"].result_list), 2)
        self.assertEqual(response.context["cl"].params.get("queue"), "default")

    def test_a_page_that_is_not_a_number_shows_the_first(self) -> None:
        response = self.client.get(changelist(state="failed", p="x"))
        self.assertEqual(response.status_code, 200)

    def test_no_note_under_the_cap(self) -> None:
        response = self.client.get(changelist(state="ready"))
        self.assertNotContains(response, "rq-cap-note")


class BreadcrumbTests(AdminTestCase):
    def test_our_pages_use_the_breadcrumbs_of_the_running_django(self) -> None:
        self.login(self.viewer)
        marker = '<ol class="breadcrumbs">' if OL_BREADCRUMBS else '<div class="breadcrumbs">'
        for url in (
            reverse("admin:robust_queue_overview"),
            reverse("admin:robust_queue_concurrency"),
            job_url("change", self.failed.pk),
        ):
            with self.subTest(url=url):
                response = self.client.get(url)
                self.assertContains(response, marker)
                self.assertContains(response, ">Robust Queue</a>")

    def test_the_job_page_links_its_state_list(self) -> None:
        self.login(self.viewer)
        response = self.client.get(job_url("change", self.failed.pk))
        self.assertContains(response, f'<a href="{changelist(state="failed")}">Failed</a>')


class ErrorSearchTests(AdminTestCase):
    def test_with_masking_on_the_failed_list_searches_the_shown_message(self) -> None:
        """Masking on (the default): a word of the error message is found."""
        self.assertIs(masking.is_on(), True)
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", q="kapu"))
        self.assertEqual([j.pk for j in response.context["cl"].result_list], [self.failed.pk])
        response = self.client.get(changelist(state="failed", q="no-such-text"))
        self.assertEqual(list(response.context["cl"].result_list), [])

    def test_a_masked_secret_is_not_found_by_guessing_it(self) -> None:
        """The message of a failure is searched as the list shows it: the
        secret it masks matches nothing, the words around it still do."""
        secret = Job.objects.get(
            result_id=tasks.fail.enqueue("upstream said token=tok-s3cr3t-v4lue rejected").id
        )
        leaked = Job.objects.get(
            result_id=tasks.echo.enqueue(password="hunter2-pw").id  # masked argument
        )
        work_off()
        FailedExecution.objects.create(
            job=leaked,
            error={
                "exception_class_path": "builtins.ValueError",
                "traceback": "ValueError: login with hunter2-pw refused",
            },
        )
        self.login(self.viewer)
        for term, found in (
            ("rejected", [secret.pk]),
            ("refused", [leaked.pk]),
            ("tok-s3cr3t", []),
            ("S3CR3T-V4LUE", []),
            ("hunter2", []),
            ("token=", [secret.pk]),
        ):
            with self.subTest(term=term):
                response = self.client.get(changelist(state="failed", q=term))
                self.assertEqual([j.pk for j in response.context["cl"].result_list], found)

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_the_failed_list_searches_error_text(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", q="kapu"))
        self.assertEqual([j.pk for j in response.context["cl"].result_list], [self.failed.pk])
        response = self.client.get(changelist(state="failed", q="no-such-text"))
        self.assertEqual(list(response.context["cl"].result_list), [])

    def test_every_failure_is_searched_where_an_index_serves_it(self) -> None:
        """Masking on or off, the error search reads every failure through
        the index of 0024 on PostgreSQL, and the newest failures only on
        SQLite, which the page says. (MariaDB's full-text index sees
        committed rows only, never this test's: it finds them among the
        newest ids, read row by row before the index; CommittedSearchTests
        in test_failure_search.py holds the index there.)"""
        from django.db import connection

        from robust_queue.admin.dashboard import stats

        tasks.fail.enqueue("other")
        work_off()
        self.login(self.viewer)
        vendor = connection.vendor
        for settings in ({"admin_mask": []}, {}):
            with self.subTest(settings=settings), override_settings(ROBUST_QUEUE=settings):
                response = self.client.get(changelist(state="failed", q="kapu"))
                found = [j.pk for j in response.context["cl"].result_list]
                self.assertEqual(found, [self.failed.pk])
                with mock.patch.object(stats, "RECENT_FAILURES", 1):
                    response = self.client.get(changelist(state="failed", q="kapu"))
                found = [j.pk for j in response.context["cl"].result_list]
                indexed = vendor in ("postgresql", "mysql")
                self.assertEqual(found, [self.failed.pk] if indexed else [])
                if vendor == "sqlite":
                    self.assertContains(
                        response, "Searched the task path and error of the newest 1 failures only"
                    )
