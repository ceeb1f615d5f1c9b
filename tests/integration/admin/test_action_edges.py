"""Admin actions at their edges: a recurring run that its concurrency limit
discards, bulk switches and runs over mixed selections, the queue form
without a name or for a hand-written pause, and bulk confirmations that
were forged or meet jobs that cannot be acted on."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse
from django.utils import timezone

from robust_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    Pause,
    Process,
    ReadyExecution,
    RecurringTask,
    ScheduledExecution,
    TaskPause,
)
from testproject import control_tasks
from tests.integration.admin.base import AdminTestCase, changelist, make_staff
from tests.integration.admin.test_actions import messages_of

RECURRING_CHANGELIST = "admin:robust_queue_recurringtask_changelist"


class EdgeTestCase(AdminTestCase):
    """``AdminTestCase`` with the types of what its test data sets."""

    superuser: User
    viewer: User
    finished: Job
    failed: Job
    ready: Job
    scheduled: Job
    process: Process
    running: Job
    blocked: Job


def recurring(key: str, task_path: str, *args: object, enabled: bool = True) -> RecurringTask:
    return RecurringTask.objects.create(
        key=key,
        schedule="0 3 * * *",
        task_path=task_path,
        arguments={"args": list(args), "kwargs": {}},
        enabled=enabled,
    )


class RecurringRunNowEdgeTests(EdgeTestCase):
    def setUp(self) -> None:
        self.login()

    def test_a_run_its_concurrency_limit_discards_warns_and_enqueues_nothing(self) -> None:
        """``discarding`` allows one job of its key at a time and drops the
        rest: a run now while one waits says so and writes no audit entry."""
        holder = control_tasks.discarding.enqueue("first")
        task = recurring("Drop-when-busy", "testproject.control_tasks.discarding", "second")
        before = set(Job.objects.values_list("pk", flat=True))
        response = self.client.post(
            reverse("admin:robust_queue_recurringtask_run", args=[task.pk]), follow=True
        )
        self.assertEqual(response.status_code, 200)
        self.assertIn(
            "Recurring task Drop-when-busy: discarded by its concurrency limit.",
            messages_of(response),
        )
        self.assertEqual(set(Job.objects.values_list("pk", flat=True)), before)
        self.assertEqual(
            list(
                ReadyExecution.objects.filter(job__task_path=task.task_path).values_list(
                    "job__result_id", flat=True
                )
            ),
            [holder.id],
        )
        self.assertIs(LogEntry.objects.exists(), False)

    def test_the_bulk_run_reports_each_task_on_its_own(self) -> None:
        good = recurring("Good-one", "testproject.tasks.add", 1, 2)
        gone = recurring("Gone-one", "testproject.tasks.no_such_task")
        before = set(Job.objects.values_list("pk", flat=True))
        response = self.client.post(
            reverse(RECURRING_CHANGELIST),
            {"action": "run_selected_now", "_selected_action": [good.pk, gone.pk]},
            follow=True,
        )
        shown = messages_of(response)
        job = Job.objects.exclude(pk__in=before).get()
        self.assertEqual((job.task_path, job.args), ("testproject.tasks.add", [1, 2]))
        url = reverse("admin:robust_queue_job_change", args=[job.pk])
        self.assertIn(
            f'Recurring task Good-one: enqueued as <a href="{url}">job #{job.pk}</a>.', shown
        )
        self.assertIn(
            "Recurring task Gone-one: could not enqueue: Task path "
            "'testproject.tasks.no_such_task' names no task declared with @task",
            " ".join(shown),
        )
        self.assertIs(
            Job.objects.filter(task_path="testproject.tasks.no_such_task").exists(), False
        )
        # Only the run that happened is in the task's history.
        recurring_type = ContentType.objects.get_for_model(RecurringTask)
        self.assertEqual(
            sorted(
                LogEntry.objects.filter(content_type=recurring_type).values_list(
                    "object_id", flat=True
                )
            ),
            [str(good.pk)],
        )


class RecurringSwitchBulkEdgeTests(EdgeTestCase):
    on: RecurringTask
    off: RecurringTask
    toggler: User

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.on = recurring("Daily-on", "testproject.tasks.report", 1)
        cls.off = recurring("Daily-off", "testproject.tasks.report", 2, enabled=False)
        cls.toggler = make_staff("toggler", "view_recurringtask", "toggle_recurringtask")

    def _switch_all(self, action: str) -> list[str]:
        self.login(self.toggler)
        response = self.client.post(
            reverse(RECURRING_CHANGELIST),
            {"action": action, "_selected_action": [self.on.pk, self.off.pk]},
            follow=True,
        )
        self.assertEqual(response.status_code, 200)
        return messages_of(response)

    def _entries(self) -> list[str]:
        return list(
            LogEntry.objects.filter(
                content_type=ContentType.objects.get_for_model(RecurringTask)
            ).values_list("change_message", flat=True)
        )

    def test_enable_selected_enables_the_disabled_and_says_which_already_were(self) -> None:
        shown = self._switch_all("enable_selected")
        self.assertIn("Recurring task Daily-off: enabled.", shown)
        self.assertIn("Recurring task Daily-on was already enabled.", shown)
        self.assertEqual(
            set(RecurringTask.objects.values_list("key", "enabled")),
            {("Daily-on", True), ("Daily-off", True)},
        )
        self.assertEqual(self._entries(), ["Recurring task Daily-off enabled."])

    def test_disable_selected_disables_the_enabled_and_says_which_already_were(self) -> None:
        shown = self._switch_all("disable_selected")
        self.assertIn("Recurring task Daily-on: disabled.", shown)
        self.assertIn("Recurring task Daily-off was already disabled.", shown)
        self.assertEqual(
            set(RecurringTask.objects.values_list("key", "enabled")),
            {("Daily-on", False), ("Daily-off", False)},
        )
        self.assertEqual(self._entries(), ["Recurring task Daily-on disabled."])

    def test_a_view_only_user_cannot_enable_either(self) -> None:
        self.login(self.viewer)
        response = self.client.post(
            reverse(RECURRING_CHANGELIST),
            {"action": "enable_selected", "_selected_action": [self.off.pk]},
        )
        self.assertEqual(response.status_code, 403)
        self.off.refresh_from_db()
        self.assertIs(self.off.enabled, False)


class QueueFormEdgeTests(EdgeTestCase):
    def setUp(self) -> None:
        self.login()

    def test_a_post_without_a_queue_is_a_bad_request(self) -> None:
        for verb in ("pause", "resume"):
            with self.subTest(verb=verb):
                response = self.client.post(reverse("admin:robust_queue_queue", args=[verb]), {})
                self.assertEqual(response.status_code, 400)
                self.assertEqual(response.content, b"No queue named.")
        self.assertIs(Pause.objects.exists(), False)

    def test_a_hand_written_pause_outside_the_name_rule_can_be_resumed(self) -> None:
        """Only pausing checks the rule: a pause row an older version (or a
        person) wrote can always be taken away."""
        Pause.objects.create(queue_name="with space")
        response = self.client.post(
            reverse("admin:robust_queue_queue", args=["resume"]),
            {"queue": "with space"},
            follow=True,
        )
        self.assertIn("Queue 'with space' resumed.", messages_of(response))
        self.assertIs(Pause.objects.exists(), False)
        entry = LogEntry.objects.get()
        self.assertEqual(
            (entry.user_id, entry.change_message),
            (self.superuser.pk, "Resumed queue 'with space'."),
        )

    def test_pausing_without_the_permission_is_refused(self) -> None:
        self.login(self.viewer)
        response = self.client.post(
            reverse("admin:robust_queue_queue", args=["pause"]), {"queue": "reports"}
        )
        self.assertEqual(response.status_code, 403)
        self.assertIs(Pause.objects.exists(), False)


class BulkConfirmationEdgeTests(EdgeTestCase):
    def setUp(self) -> None:
        self.login()

    def _confirm(self, action: str, url: str, selected: list[int], max_pk: str) -> list[str]:
        response = self.client.post(
            url,
            {
                "action": action,
                "_selected_action": selected,
                "index": 0,
                "select_across": 0,
                "confirm": "yes",
                "max_pk": max_pk,
            },
            follow=True,
        )
        self.assertEqual(response.status_code, 200)
        return messages_of(response)

    def test_a_forged_bound_acts_on_nothing(self) -> None:
        """The bound comes from the confirmation page: one that is not a
        number (or missing) bounds the action to no job at all."""
        for max_pk in ("abc", "", "1e9"):
            with self.subTest(max_pk=max_pk):
                shown = self._confirm(
                    "retry_selected", changelist(state="failed"), [self.failed.pk], max_pk
                )
                self.assertIn("Retried 0 of 0 job(s).", shown)
                self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), True)

    def test_a_bound_below_the_selection_leaves_the_newer_jobs(self) -> None:
        shown = self._confirm(
            "discard_selected",
            changelist(),
            [self.finished.pk, self.ready.pk],
            str(self.finished.pk),
        )
        self.assertIn("Discarded 1 of 1 job(s).", shown)
        self.assertIs(Job.objects.filter(pk=self.finished.pk).exists(), False)
        self.assertIs(Job.objects.filter(pk=self.ready.pk).exists(), True)

    def test_cancelling_a_job_without_a_state_is_counted_as_skipped(self) -> None:
        """A job with no execution row (written by hand, or damaged) is
        not finished, so cancel looks at it, but it cannot be cancelled."""
        ReadyExecution.objects.filter(job=self.ready).delete()
        shown = self._confirm(
            "cancel_selected", changelist(), [self.ready.pk, self.scheduled.pk], str(self.ready.pk)
        )
        self.assertIn(
            "Cancelled (or asked to stop) 0 of 1 job(s). "
            "1 skipped (state changed, or locked by a worker).",
            shown,
        )
        self.assertIs(FailedExecution.objects.filter(job=self.ready).exists(), False)
        # The bound kept the newer scheduled job out of the action.
        self.assertIs(FailedExecution.objects.filter(job=self.scheduled).exists(), False)


class RescheduleEdgeTests(EdgeTestCase):
    def test_a_selection_with_nothing_to_reschedule_says_so_even_when_confirmed(self) -> None:
        """Only scheduled and failed jobs move: a confirmed form over a
        ready and a running job changes nothing and says why."""
        self.login()
        run_at = (timezone.localtime() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
        page = self.client.post(
            changelist(),
            {
                "action": "reschedule_selected",
                "_selected_action": [self.ready.pk, self.running.pk],
                "index": 0,
                "confirm": "yes",
                "run_at": run_at,
            },
        )
        self.assertEqual(page.status_code, 200)
        self.assertEqual(page.context["count"], 0)
        self.assertContains(
            page,
            "None of the selected jobs is scheduled or failed: there is nothing to reschedule.",
        )
        self.assertNotContains(page, "Yes, reschedule")
        self.assertIs(ReadyExecution.objects.filter(job=self.ready).exists(), True)
        self.assertIs(ClaimedExecution.objects.filter(job=self.running).exists(), True)
        self.assertIs(ScheduledExecution.objects.filter(job=self.ready).exists(), False)
        self.assertIs(LogEntry.objects.exists(), False)


class TaskPauseEdgeTests(EdgeTestCase):
    REPORT = "testproject.tasks.report"

    def setUp(self) -> None:
        self.login()

    def test_a_job_that_is_no_job_sends_back_to_the_overview(self) -> None:
        """The ``job`` field only picks the page to go back to (and the
        audit entry's job): one naming no job falls back to the overview."""
        gone = self.finished.pk
        Job.objects.filter(pk=gone).delete()
        for job in ("abc", "0", str(gone), "9" * 30):
            with self.subTest(job=job):
                response = self.client.post(
                    reverse("admin:robust_queue_task", args=["pause"]),
                    {"task": self.REPORT, "job": job},
                )
                self.assertRedirects(
                    response, reverse("admin:robust_queue_overview"), fetch_redirect_response=False
                )
                TaskPause.objects.resume(self.REPORT)
        entries = LogEntry.objects.filter(change_message=f"Paused task {self.REPORT}.")
        self.assertEqual(entries.count(), 4)
        self.assertEqual(set(entries.values_list("object_id", flat=True)), {None})

    def test_resuming_a_task_that_is_not_paused_says_so_and_logs_nothing(self) -> None:
        response = self.client.post(
            reverse("admin:robust_queue_task", args=["resume"]),
            {"task": self.REPORT},
            follow=True,
        )
        self.assertIn(f"Task {self.REPORT} was already resumed.", messages_of(response))
        self.assertIs(LogEntry.objects.exists(), False)
