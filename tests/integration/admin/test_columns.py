"""Each state's list shows what an operator looks for first."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from robust_queue.models import FailedExecution, Job, ScheduledExecution
from testproject import tasks
from tests.helpers import work_off
from tests.integration.admin.base import AdminTestCase, changelist


class StateColumnTests(AdminTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)

    def _headers(self, state: str) -> list[str]:
        response = self.client.get(changelist(state=state))
        self.assertEqual(response.status_code, 200)
        return [h["text"] for h in response.context["result_headers"] if h["text"]]

    def test_each_state_has_its_columns(self) -> None:
        expected = {
            "failed": ["Failed", "Exception", "Attempts"],
            "scheduled": ["Runs"],
            "claimed": ["Started", "Running for", "Worker"],
            "blocked": ["Concurrency key", "Blocked since"],
            "finished": ["Finished", "Ran for", "Waited"],
            "ready": ["Waiting for"],
        }
        for state, headers in expected.items():
            with self.subTest(state=state):
                shown = self._headers(state)
                for header in headers:
                    self.assertIn(header, shown)

    def test_failed_list_shows_the_message_newest_failure_first(self) -> None:
        later = Job.objects.get(result_id=tasks.fail.enqueue("second").id)
        work_off()
        # The older job fails again, last: it comes first.
        FailedExecution.objects.filter(job=self.failed).retry_all()
        work_off()
        response = self.client.get(changelist(state="failed"))
        rows = [job.pk for job in response.context["cl"].result_list]
        self.assertEqual(rows, [self.failed.pk, later.pk])
        self.assertContains(response, ">kaput<")

    def test_scheduled_list_flags_overdue_jobs_soonest_first(self) -> None:
        soon = Job.objects.get(
            result_id=tasks.add.using(run_after=timezone.now() + timedelta(minutes=5))
            .enqueue(1, 1)
            .id
        )
        ScheduledExecution.objects.filter(job=self.scheduled).update(
            scheduled_at=timezone.now() - timedelta(minutes=1)
        )
        response = self.client.get(changelist(state="scheduled"))
        self.assertEqual(
            [j.pk for j in response.context["cl"].result_list], [self.scheduled.pk, soon.pk]
        )
        self.assertContains(response, ">overdue<", count=1)
        self.assertContains(response, "in 4 min")

    def test_running_list_links_the_worker(self) -> None:
        response = self.client.get(changelist(state="claimed"))
        self.assertContains(response, f"/admin/robust_queue/process/{self.process.pk}/change/")

    def test_finished_list_shows_durations(self) -> None:
        Job.objects.filter(pk=self.finished.pk).update(
            enqueued_at=timezone.now() - timedelta(seconds=90),
            started_at=timezone.now() - timedelta(seconds=30),
            last_attempted_at=timezone.now() - timedelta(seconds=30),
            finished_at=timezone.now() - timedelta(seconds=18),
        )
        response = self.client.get(changelist(state="finished"))
        self.assertContains(response, "1 min")  # waited
        self.assertContains(response, "12 s")  # ran for


class AttemptHistoryTests(AdminTestCase):
    def test_every_attempt_is_on_the_job_page(self) -> None:
        from robust_queue.models import FailedExecution

        for _ in range(2):  # three attempts in all
            FailedExecution.objects.filter(job=self.failed).retry_all()
            work_off()
        self.login(self.viewer)
        response = self.client.get(f"/admin/robust_queue/job/{self.failed.pk}/change/")
        attempts = response.context["attempts"]
        self.assertEqual(
            [a.outcome for a in attempts], ["failed", "failed", "failed, no retry left"]
        )
        # Every failed attempt's error records its own start and end.
        for attempt in attempts:
            self.assertIsNotNone(attempt.started)
            self.assertIsNotNone(attempt.ended)
        self.assertNotContains(response, "not recorded")
        timeline = [label for _, label in response.context["timeline"]]
        for number in (1, 2, 3):
            self.assertIn(f"Attempt {number} started on test-worker", timeline)
