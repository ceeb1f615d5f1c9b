"""Every admin page renders for a viewer, with what an operator needs."""

from __future__ import annotations

from django.urls import reverse

from robust_queue.models import Pause
from tests.integration.admin.base import AdminTestCase, changelist, job_url


class PageTests(AdminTestCase):
    def test_overview_shows_queues_counts_charts_and_failures(self) -> None:
        self.login(self.viewer)
        response = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(response, "Queue overview")
        self.assertContains(response, 'id="rq-queues"')
        self.assertContains(response, ">reports</a>")
        self.assertContains(response, "builtins.ValueError")
        self.assertContains(response, "state=failed&amp;exception=builtins.ValueError")
        self.assertContains(response, '<svg class="rq-chart"', count=2)
        counts = response.context["counts"]
        self.assertEqual(
            [counts[s] for s in ("ready", "scheduled", "claimed", "blocked", "failed")],
            [1, 1, 1, 1, 1],
        )
        self.assertEqual(counts["finished_hour"], 1)

    def test_overview_shows_paused_queues(self) -> None:
        Pause.objects.create(queue_name="emails")
        self.login()
        response = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(response, ">emails</a>")
        self.assertContains(response, "Paused")
        self.assertContains(response, "Resume")

    def test_every_state_list(self) -> None:
        self.login(self.viewer)
        for state, job in [
            ("ready", self.ready),
            ("scheduled", self.scheduled),
            ("claimed", self.running),
            ("blocked", self.blocked),
            ("failed", self.failed),
            ("finished", self.finished),
        ]:
            with self.subTest(state=state):
                response = self.client.get(changelist(state=state))
                self.assertEqual(response.status_code, 200)
                self.assertEqual([row.pk for row in response.context["cl"].result_list], [job.pk])

    def test_all_jobs_list(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist())
        self.assertEqual(len(response.context["cl"].result_list), 6)
        self.assertContains(response, "rq-state-failed")

    def test_filters_by_queue_task_period_and_exception(self) -> None:
        self.login(self.viewer)
        cases = [
            ({"queue": "reports"}, [self.ready]),
            ({"task": "testproject.tasks.fail"}, [self.failed]),
            ({"state": "finished", "period": "1h"}, [self.finished]),
            ({"state": "failed", "exception": "builtins.ValueError"}, [self.failed]),
            ({"state": "failed", "exception": "builtins.KeyError"}, []),
            ({"state": "claimed", "process": str(self.process.pk)}, [self.running]),
            ({"concurrency_key": "key-1"}, [self.blocked]),
        ]
        for params, expected in cases:
            with self.subTest(params=params):
                response = self.client.get(changelist(**params))
                self.assertEqual(response.status_code, 200)
                self.assertEqual(
                    [r.pk for r in response.context["cl"].result_list], [j.pk for j in expected]
                )

    def test_bad_filter_values_redirect_with_error_flag(self) -> None:
        self.login(self.viewer)
        for params in ({"state": "bogus"}, {"period": "2y"}, {"process": "abc"}):
            with self.subTest(params=params):
                response = self.client.get(changelist(**params))
                self.assertEqual(response.status_code, 302)
                self.assertIn("?e=1", response["Location"])

    def test_search_by_result_id_and_task_path(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(q=self.failed.result_id))
        self.assertEqual([r.pk for r in response.context["cl"].result_list], [self.failed.pk])
        response = self.client.get(changelist(q="tasks.report"))
        self.assertEqual([r.pk for r in response.context["cl"].result_list], [self.ready.pk])

    def test_list_does_not_load_large_columns(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist())
        row = response.context["cl"].result_list[0]
        self.assertEqual(row.get_deferred_fields() >= {"arguments", "return_value", "errors"}, True)
        # The failed list reads the arguments (to mask the failure message
        # with them) but neither the return value, the errors nor the error.
        response = self.client.get(changelist(state="failed"))
        row = response.context["cl"].result_list[0]
        self.assertEqual(row.get_deferred_fields() >= {"return_value", "errors"}, True)
        self.assertIn("error", row.failed_execution.get_deferred_fields())
        self.assertEqual(row.exception_class, "builtins.ValueError")
        self.assertContains(response, '<span class="rq-exception">ValueError</span>')

    def test_job_page_shows_arguments_errors_and_timeline(self) -> None:
        self.login(self.viewer)
        response = self.client.get(job_url("change", self.failed.pk))
        self.assertContains(response, "testproject.tasks.fail")
        self.assertContains(response, "&quot;kaput&quot;")
        self.assertContains(response, "Attempt 1: builtins.ValueError")
        self.assertContains(response, "Traceback (most recent call last)")
        self.assertContains(response, "test-worker")
        self.assertContains(response, "Attempt 1 failed, no retry left")
        self.assertContains(response, "Enqueued on queue")

    def test_job_page_shows_return_value_of_finished_job(self) -> None:
        self.login(self.viewer)
        response = self.client.get(job_url("change", self.finished.pk))
        self.assertContains(
            response, '<pre class="rq-code" id="rq-return-value">3</pre>', html=False
        )
        self.assertContains(response, "Finished")

    def test_job_page_of_running_job_names_its_process(self) -> None:
        self.login(self.viewer)
        response = self.client.get(job_url("change", self.running.pk))
        self.assertContains(response, "Running on")
        self.assertContains(response, "pid 1 on test")

    def test_unknown_job_is_404(self) -> None:
        self.login(self.viewer)
        self.assertEqual(self.client.get(job_url("change", 999999)).status_code, 404)
        self.assertEqual(self.client.get(job_url("change", "abc")).status_code, 404)

    def test_processes_page(self) -> None:
        self.process.metadata = {"queues": ["slow", "default"], "threads": 3}
        self.process.save()
        self.login(self.viewer)
        response = self.client.get(reverse("admin:robust_queue_process_changelist"))
        self.assertContains(response, "slow, default")
        self.assertContains(response, f"#{self.running.pk} sleep_for")
        self.assertNotContains(response, "stale")

    def test_stale_process_is_flagged(self) -> None:
        from datetime import timedelta

        from django.utils import timezone

        self.process.last_heartbeat_at = timezone.now() - timedelta(hours=1)
        self.process.save()
        self.login(self.viewer)
        response = self.client.get(reverse("admin:robust_queue_process_changelist"))
        self.assertContains(response, "rq-stale")

    def test_the_alive_threshold_setting_decides_what_is_stale(self) -> None:
        from datetime import timedelta

        from django.test import override_settings
        from django.utils import timezone

        self.process.last_heartbeat_at = timezone.now() - timedelta(minutes=2)
        self.process.save()
        self.login(self.viewer)
        url = reverse("admin:robust_queue_process_changelist")
        self.assertNotContains(self.client.get(url), "rq-stale")
        with override_settings(ROBUST_QUEUE={"process_alive_threshold": timedelta(minutes=1)}):
            self.assertContains(self.client.get(url), "rq-stale")

    def test_concurrency_page(self) -> None:
        self.login(self.viewer)
        response = self.client.get(reverse("admin:robust_queue_concurrency"))
        self.assertContains(response, "key-1")
        self.assertEqual(response.context["blocked_keys"][0]["count"], 1)

    def test_app_index_links_dashboards(self) -> None:
        self.login(self.viewer)
        response = self.client.get(reverse("admin:app_list", args=["robust_queue"]))
        self.assertContains(response, reverse("admin:robust_queue_overview"))


class DetailPageTests(AdminTestCase):
    def test_job_page_renders_in_every_state(self) -> None:
        self.login(self.viewer)
        for job in (
            self.ready,
            self.scheduled,
            self.running,
            self.blocked,
            self.failed,
            self.finished,
        ):
            with self.subTest(state=job.pk):
                response = self.client.get(job_url("change", job.pk))
                self.assertEqual(response.status_code, 200)
                self.assertContains(response, f"Job #{job.pk}")

    def test_process_page_is_read_only(self) -> None:
        self.login(self.viewer)
        url = reverse("admin:robust_queue_process_change", args=[self.process.pk])
        response = self.client.get(url)
        self.assertContains(response, "test-worker")
        self.assertNotContains(response, 'name="_save"')
        self.assertEqual(self.client.post(url, {"name": "x"}).status_code, 403)

    def test_jobs_cannot_be_added_or_deleted_through_the_admin(self) -> None:
        self.login()
        self.assertEqual(self.client.get(job_url("add")).status_code, 403)
        self.assertEqual(self.client.post(job_url("delete", self.failed.pk)).status_code, 403)
