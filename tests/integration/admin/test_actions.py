"""Retry, discard and run now: for one job, selected rows, or a filter."""

from __future__ import annotations

from django.contrib.messages import get_messages
from django.urls import reverse

from robust_queue.models import FailedExecution, Job, Pause, ReadyExecution
from robust_queue.operations import bulk as operations
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist, job_url


def messages_of(response: object) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


class OneJobActionTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def test_retry_makes_a_failed_job_ready(self) -> None:
        response = self.client.post(job_url("action", self.failed.pk, "retry"))
        self.assertRedirects(
            response, job_url("change", self.failed.pk), fetch_redirect_response=False
        )
        self.assertIs(ReadyExecution.objects.filter(job=self.failed).exists(), True)
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), False)

    def test_retry_of_a_job_that_is_not_failed_changes_nothing(self) -> None:
        response = self.client.post(job_url("action", self.finished.pk, "retry"), follow=True)
        self.assertIn("was not changed", " ".join(messages_of(response)))
        self.assertIsNotNone(Job.objects.get(pk=self.finished.pk).finished_at)

    def test_run_now_makes_scheduled_and_blocked_jobs_ready(self) -> None:
        for job in (self.scheduled, self.blocked):
            with self.subTest(job=job.pk):
                self.client.post(job_url("action", job.pk, "run"))
                self.assertIs(ReadyExecution.objects.filter(job=job).exists(), True)

    def test_discard_deletes_the_job(self) -> None:
        response = self.client.post(job_url("action", self.failed.pk, "discard"))
        self.assertRedirects(response, job_url("changelist"), fetch_redirect_response=False)
        self.assertIs(Job.objects.filter(pk=self.failed.pk).exists(), False)

    def test_discard_asks_first_with_a_page_not_a_script(self) -> None:
        page = self.client.get(job_url("change", self.failed.pk))
        self.assertNotContains(page, "onsubmit")
        self.assertNotContains(page, "<script>")
        response = self.client.get(job_url("action", self.failed.pk, "discard"))
        self.assertContains(response, f"Discard job #{self.failed.pk}")
        self.assertContains(response, ">Yes, discard it</button>")
        self.assertIs(Job.objects.filter(pk=self.failed.pk).exists(), True)

    def test_only_discard_asks_by_get(self) -> None:
        for verb in ("retry", "run"):
            response = self.client.get(job_url("action", self.failed.pk, verb))
            self.assertEqual(response.status_code, 405)
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), True)

    def test_a_running_job_cannot_be_discarded(self) -> None:
        response = self.client.post(job_url("action", self.running.pk, "discard"), follow=True)
        self.assertIn("is running and cannot be discarded", " ".join(messages_of(response)))
        self.assertIs(Job.objects.filter(pk=self.running.pk).exists(), True)

    def test_actions_need_post(self) -> None:
        self.assertEqual(
            self.client.get(job_url("action", self.failed.pk, "retry")).status_code, 405
        )

    def test_unknown_verb_is_404(self) -> None:
        self.assertEqual(
            self.client.post(job_url("action", self.failed.pk, "explode")).status_code, 404
        )

    def test_job_page_offers_only_the_actions_of_its_state(self) -> None:
        response = self.client.get(job_url("change", self.failed.pk))
        self.assertContains(response, ">Retry</button>")
        self.assertContains(response, ">Discard</a>")
        self.assertNotContains(response, ">Run now</button>")
        response = self.client.get(job_url("change", self.running.pk))
        self.assertNotContains(response, ">Discard</a>")


class BulkActionTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def _fail_more(self, count: int) -> list[int]:
        ids = [tasks.fail.enqueue(f"n{i}").id for i in range(count)]
        work_off()
        return list(Job.objects.filter(result_id__in=ids).values_list("pk", flat=True))

    def _post_action(self, action: str, url: str, selected: list[int], across: bool = False):  # type: ignore[no-untyped-def]
        """Ask (the confirmation page), then say yes with what it counted."""
        data = {
            "action": action,
            "_selected_action": selected,
            "index": 0,
            "select_across": int(across),
        }
        page = self.client.post(url, data)
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, 'id="rq-bulk-confirm"')
        confirmed = {
            **data,
            "confirm": "yes",
            "max_pk": page.context["max_pk"],
            "count": page.context["count"],
        }
        return self.client.post(url, confirmed)

    def test_retry_selected_rows(self) -> None:
        more = self._fail_more(2)
        response = self._post_action(
            "retry_selected", changelist(state="failed"), [self.failed.pk, more[0]]
        )
        self.assertEqual(response.status_code, 302)
        self.assertEqual(FailedExecution.objects.count(), 1)
        self.assertIn("Retried 2 of 2 job(s).", messages_of(response))

    def test_retry_everything_matching_the_filter_in_batches(self) -> None:
        self._fail_more(6)
        response = self._post_action(
            "retry_selected",
            changelist(state="failed", task="testproject.tasks.fail"),
            [self.failed.pk],
            across=True,
        )
        self.assertEqual(response.status_code, 302)
        self.assertIn("Retried 7 of 7 job(s).", messages_of(response))
        self.assertEqual(FailedExecution.objects.count(), 0)

    def test_operations_walk_every_batch(self) -> None:
        self._fail_more(4)
        outcome = operations.retry(Job.objects.filter(failed_execution__isnull=False), size=2)
        self.assertEqual((outcome.changed, outcome.total), (5, 5))
        self.assertEqual(FailedExecution.objects.count(), 0)

    def test_run_selected_now(self) -> None:
        response = self._post_action(
            "run_selected_now",
            changelist(),
            [self.scheduled.pk, self.blocked.pk, self.finished.pk],
        )
        self.assertIn("Made ready 2 of 2 job(s).", messages_of(response))
        self.assertEqual(
            ReadyExecution.objects.filter(job__in=[self.scheduled, self.blocked]).count(), 2
        )

    def test_discard_selected_skips_running_jobs(self) -> None:
        response = self._post_action(
            "discard_selected", changelist(), [self.failed.pk, self.running.pk, self.finished.pk]
        )
        self.assertIn("Discarded 2 of 2 job(s).", messages_of(response))
        self.assertEqual(
            set(
                Job.objects.filter(
                    pk__in=[self.failed.pk, self.running.pk, self.finished.pk]
                ).values_list("pk", flat=True)
            ),
            {self.running.pk},
        )

    def test_discard_everything_matching_the_filter(self) -> None:
        self._fail_more(3)
        self._post_action(
            "discard_selected", changelist(state="failed"), [self.failed.pk], across=True
        )
        self.assertEqual(Job.objects.filter(task_path="testproject.tasks.fail").count(), 0)
        self.assertIs(Job.objects.filter(pk=self.finished.pk).exists(), True)


class QueueActionTests(AdminTestCase):
    def setUp(self) -> None:
        self.login()

    def test_pause_and_resume(self) -> None:
        url = reverse("admin:robust_queue_queue", args=["pause"])
        response = self.client.post(url, {"queue": "reports"})
        self.assertRedirects(
            response, reverse("admin:robust_queue_overview"), fetch_redirect_response=False
        )
        self.assertIs(Pause.objects.filter(queue_name="reports").exists(), True)
        self.client.post(reverse("admin:robust_queue_queue", args=["resume"]), {"queue": "reports"})
        self.assertIs(Pause.objects.filter(queue_name="reports").exists(), False)

    def test_unknown_queue_verb_is_404(self) -> None:
        self.assertEqual(
            self.client.post(
                reverse("admin:robust_queue_queue", args=["drop"]), {"queue": "reports"}
            ).status_code,
            404,
        )
