"""The operator's console (issue 28 §3, §4): everyone's actions in one
place, Retry / Discard on each failed row, sorting by the columns an index
serves, "Show all" within a state, quiet / stop a worker from its page."""

from __future__ import annotations

from django.contrib.admin.models import LogEntry
from django.test import Client
from django.urls import reverse

from robust_queue.models import FailedExecution, Job, Pause, Process, QueueAction
from robust_queue.running.performing import perform
from testproject import tasks
from tests.helpers import claim, make_process, work_off
from tests.integration.admin.base import (
    VIEW_PERMISSIONS,
    AdminTestCase,
    changelist,
    job_url,
    make_staff,
)

ACTIONS = reverse("admin:robust_queue_queueaction_changelist")


def _command_url(process: Process, verb: str) -> str:
    return reverse("admin:robust_queue_process_command", args=[process.pk, verb])


class QueueActionsPageTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.alice = make_staff("alice", *VIEW_PERMISSIONS, "retry_job", "pause_queue")
        cls.auditor = make_staff("auditor", *VIEW_PERMISSIONS, "view_queueaction")
        cls.other_failed = Job.objects.get(
            result_id=tasks.fail.using(queue_name="emails").enqueue("x").id
        )
        for row in claim(queue_name="emails"):
            perform(row)

    def _act_as_alice_and_root(self) -> None:
        self.login(self.alice)
        self.client.post(job_url("action", self.failed.pk, "retry"))
        self.client.post(reverse("admin:robust_queue_queue", args=["pause"]), {"queue": "emails"})
        self.login(self.superuser)
        self.client.post(
            changelist(state="failed", queue="emails"),
            {
                "action": "discard_selected",
                "_selected_action": [self.other_failed.pk],
                "index": 0,
                "confirm": "yes",
                "max_pk": 2**62,
            },
        )

    def test_everyone_s_actions_in_one_place_with_who_what_how_many_and_where(self) -> None:
        self._act_as_alice_and_root()
        rows = list(
            QueueAction.objects.order_by("pk").values_list(
                "username", "verb", "count", "queue_name", "job_id"
            )
        )
        self.assertEqual(
            rows,
            [
                ("alice", "retry", 1, self.failed.queue_name, self.failed.pk),
                ("alice", "pause queue", None, "emails", None),
                ("root", "discard", 1, "emails", None),
            ],
        )
        self.assertTrue(Pause.objects.filter(queue_name="emails").exists())
        # Django's "Recent actions" shows each their own; this page all.
        self.login(self.auditor)
        response = self.client.get(ACTIONS)
        self.assertEqual(response.status_code, 200)
        for text in ("alice", "root", "Retried job", "Paused queue", "Discarded 1 of 1"):
            self.assertContains(response, text)
        self.assertEqual(LogEntry.objects.filter(user=self.alice).count(), 2)

    def test_filters_by_user_action_and_queue(self) -> None:
        self._act_as_alice_and_root()
        self.login(self.auditor)
        for query, expected in (
            ("username=alice", 2),
            ("verb=discard", 1),
            ("queue_name=emails", 2),
            ("username=alice&queue_name=emails", 1),
        ):
            with self.subTest(query=query):
                response = self.client.get(f"{ACTIONS}?{query}")
                self.assertEqual(response.status_code, 200)
                self.assertEqual(len(response.context["cl"].result_list), expected)

    def test_staff_without_the_permission_get_403_and_no_link(self) -> None:
        self.login(self.viewer)
        self.assertEqual(self.client.get(ACTIONS).status_code, 403)
        overview = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertNotContains(overview, ACTIONS)
        self.login(self.auditor)
        overview = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(overview, f'href="{ACTIONS}"')
        self.login(self.superuser)
        self.assertEqual(self.client.get(ACTIONS).status_code, 200)

    def test_the_page_changes_nothing(self) -> None:
        self._act_as_alice_and_root()
        self.login(self.superuser)
        row = QueueAction.objects.first()
        self.assertEqual(self.client.get(f"{ACTIONS}add/").status_code, 403)
        self.client.post(reverse("admin:robust_queue_queueaction_delete", args=[row.pk]))
        self.assertTrue(QueueAction.objects.filter(pk=row.pk).exists())


class FailedRowButtonTests(AdminTestCase):
    def test_retry_and_discard_on_each_failed_row(self) -> None:
        self.login(self.superuser)
        response = self.client.get(changelist(state="failed"))
        retry = job_url("action", self.failed.pk, "retry")
        self.assertContains(response, f'formaction="{retry}"')
        self.assertContains(response, 'id="rq-row-form"')
        self.assertContains(response, job_url("action", self.failed.pk, "discard") + "?next=")

    def test_a_row_s_retry_acts_audits_and_goes_back_to_the_list(self) -> None:
        self.login(self.superuser)
        back = changelist(state="failed", queue="default")
        response = self.client.post(job_url("action", self.failed.pk, "retry"), {"next": back})
        self.assertRedirects(response, back, fetch_redirect_response=False)
        self.assertFalse(FailedExecution.objects.filter(job=self.failed).exists())
        action = QueueAction.objects.get()
        self.assertEqual((action.verb, action.job_id), ("retry", self.failed.pk))

    def test_a_row_s_discard_asks_first_then_goes_back(self) -> None:
        self.login(self.superuser)
        back = changelist(state="failed")
        url = job_url("action", self.failed.pk, "discard")
        page = self.client.get(url, {"next": back})
        self.assertContains(page, "Yes, discard it")
        self.assertContains(page, f'name="next" value="{back.replace("&", "&amp;")}"')
        self.assertTrue(Job.objects.filter(pk=self.failed.pk).exists())
        response = self.client.post(url, {"next": back})
        self.assertRedirects(response, back, fetch_redirect_response=False)
        self.assertFalse(Job.objects.filter(pk=self.failed.pk).exists())
        self.assertEqual(QueueAction.objects.get().verb, "discard")

    def test_next_must_be_this_site(self) -> None:
        self.login(self.superuser)
        response = self.client.post(
            job_url("action", self.failed.pk, "retry"), {"next": "https://evil.example/"}
        )
        self.assertRedirects(
            response, job_url("change", self.failed.pk), fetch_redirect_response=False
        )

    def test_no_button_without_the_permission_and_a_forged_post_gets_403(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed"))
        self.assertNotContains(response, "rq-row-retry")
        self.assertNotContains(response, "rq-row-discard")
        forged = Client(enforce_csrf_checks=False)
        forged.force_login(self.viewer)
        self.assertEqual(forged.post(job_url("action", self.failed.pk, "retry")).status_code, 403)
        self.assertEqual(forged.post(job_url("action", self.failed.pk, "discard")).status_code, 403)
        self.assertTrue(FailedExecution.objects.filter(job=self.failed).exists())
        retrier = make_staff("retrier", *VIEW_PERMISSIONS, "retry_job")
        self.login(retrier)
        response = self.client.get(changelist(state="failed"))
        self.assertContains(response, "rq-row-retry")
        self.assertNotContains(response, "rq-row-discard")

    def test_the_buttons_need_the_csrf_token(self) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.superuser)
        self.assertEqual(client.post(job_url("action", self.failed.pk, "retry")).status_code, 403)

    def test_only_the_failed_list_has_them(self) -> None:
        self.login(self.superuser)
        for state in ("", "ready", "finished"):
            with self.subTest(state=state):
                self.assertNotContains(self.client.get(changelist(state=state)), "rq-row-retry")


class SortingTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.failures = [Job.objects.get(result_id=tasks.fail.enqueue(f"n{i}").id) for i in range(3)]
        work_off()

    def _ids(self, **params: str) -> list[int]:
        response = self.client.get(changelist(**params))
        self.assertEqual(response.status_code, 200)
        return [job.pk for job in response.context["cl"].result_list]

    def test_the_failed_list_sorts_by_job_and_by_failure_time_and_says_so(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed"))
        self.assertEqual(response.context["cl"].sortable_by, ("job", "failed_at"))
        self.assertContains(response, "Sort by Job, Failed: the columns an index serves")
        columns = response.context["cl"].list_display
        job, failed = columns.index("job"), columns.index("failed_at")
        newest_first = self._ids(state="failed")
        self.assertEqual(self._ids(state="failed", o=f"{job}"), sorted(newest_first))
        self.assertEqual(self._ids(state="failed", o=f"-{job}"), sorted(newest_first, reverse=True))
        by_time = [f.job_id for f in FailedExecution.objects.order_by("created_at", "pk")]
        self.assertEqual(self._ids(state="failed", o=f"{failed}"), by_time)
        self.assertEqual(self._ids(state="failed", o=f"-{failed}"), by_time[::-1])
        self.assertContains(self.client.get(changelist(state="failed", o=f"{job}")), "sorted")

    def test_an_unsortable_column_keeps_the_list_s_order(self) -> None:
        self.login(self.viewer)
        own = self._ids(state="failed")
        task = self.client.get(changelist(state="failed")).context["cl"].list_display.index("task")
        # No index serves the task column.
        self.assertEqual(self._ids(state="failed", o=f"{task}"), own)
        self.assertEqual(self._ids(state="failed", o="x.-99"), own)

    def test_each_state_s_sortable_columns(self) -> None:
        self.login(self.viewer)
        for state, sortable in (
            ("", ("job", "enqueued")),
            ("ready", ("job", "priority")),
            ("scheduled", ("job", "run_at")),
            ("claimed", ("job",)),
            ("blocked", ("job", "blocked_since")),
            ("finished", ("job", "finished")),
        ):
            with self.subTest(state=state):
                response = self.client.get(changelist(state=state, o="1"))
                self.assertEqual(response.status_code, 200)
                self.assertEqual(response.context["cl"].sortable_by, sortable)

    def test_tabs_drop_the_order(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", o="1", queue="default"))
        tabs = {tab["value"]: tab["query"] for tab in response.context["state_tabs"]}
        self.assertEqual(tabs["ready"], "queue=default&state=ready")


class ShowAllTests(AdminTestCase):
    def test_show_all_keeps_the_state(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", q="fail", queue="default"))
        self.assertContains(
            response, '<a href="?state=failed">Show all failed jobs</a>', html=False
        )
        # Django's own "(Show all)" beside the search, which left the state,
        # is not shown.
        self.assertNotContains(response, '<a href="?">')

    def test_nothing_to_show_when_nothing_narrows(self) -> None:
        self.login(self.viewer)
        response = self.client.get(changelist(state="failed", p="1"))
        self.assertNotContains(response, 'id="rq-show-all"')
        response = self.client.get(changelist(q="fail"))
        self.assertContains(response, '<a href="?">Show all jobs</a>')


class ProcessCommandAdminTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.operator = make_staff("operator", *VIEW_PERMISSIONS, "command_process")
        cls.worker = make_process("worker-a")
        cls.supervisor = Process.objects.create(
            kind="supervisor", name="supervisor-a", pid=2, hostname="test"
        )

    def test_quiet_asks_first_then_sets_the_command_and_audits(self) -> None:
        self.login(self.operator)
        page = self.client.get(reverse("admin:robust_queue_process_change", args=[self.worker.pk]))
        self.assertContains(page, 'id="rq-process-quiet"')
        self.assertContains(page, 'id="rq-process-stop"')
        confirm = self.client.get(_command_url(self.worker, "quiet"))
        self.assertContains(confirm, "Yes, quiet it")
        self.worker.refresh_from_db()
        self.assertIsNone(self.worker.command)
        response = self.client.post(_command_url(self.worker, "quiet"))
        self.assertRedirects(
            response,
            reverse("admin:robust_queue_process_change", args=[self.worker.pk]),
            fetch_redirect_response=False,
        )
        self.worker.refresh_from_db()
        self.assertEqual(self.worker.command, "quiet")
        action = QueueAction.objects.get()
        self.assertEqual((action.username, action.verb), ("operator", "quiet worker"))
        listing = self.client.get(reverse("admin:robust_queue_process_changelist"))
        self.assertContains(listing, "quiet asked")

    def test_stop_after_quiet_and_nothing_after_stop(self) -> None:
        self.login(self.operator)
        self.client.post(_command_url(self.worker, "quiet"))
        self.worker.acknowledge("quiet")
        self.client.post(_command_url(self.worker, "stop"))
        self.worker.refresh_from_db()
        self.assertEqual(self.worker.command, "stop")
        response = self.client.post(_command_url(self.worker, "quiet"), follow=True)
        self.assertContains(response, "asked to stop already")
        self.worker.refresh_from_db()
        self.assertEqual(self.worker.command, "stop")

    def test_only_workers_take_commands(self) -> None:
        self.login(self.operator)
        page = self.client.get(
            reverse("admin:robust_queue_process_change", args=[self.supervisor.pk])
        )
        self.assertNotContains(page, 'id="rq-process-quiet"')
        response = self.client.post(_command_url(self.supervisor, "stop"), follow=True)
        self.assertContains(response, "only workers take commands")
        self.supervisor.refresh_from_db()
        self.assertIsNone(self.supervisor.command)

    def test_view_only_staff_see_no_button_and_a_forged_post_gets_403(self) -> None:
        self.login(self.viewer)
        page = self.client.get(reverse("admin:robust_queue_process_change", args=[self.worker.pk]))
        self.assertEqual(page.status_code, 200)
        self.assertNotContains(page, 'id="rq-process-quiet"')
        for verb in ("quiet", "stop"):
            self.assertEqual(self.client.post(_command_url(self.worker, verb)).status_code, 403)
            self.assertEqual(self.client.get(_command_url(self.worker, verb)).status_code, 403)
        blind = make_staff("blind", "command_process")
        self.login(blind)
        self.assertEqual(self.client.post(_command_url(self.worker, "stop")).status_code, 403)
        self.worker.refresh_from_db()
        self.assertIsNone(self.worker.command)
        self.assertFalse(QueueAction.objects.exists())

    def test_unknown_verbs_and_ids(self) -> None:
        self.login(self.superuser)
        self.assertEqual(self.client.post(_command_url(self.worker, "kill")).status_code, 404)
        url = reverse("admin:robust_queue_process_command", args=["99999999", "quiet"])
        self.assertEqual(self.client.post(url).status_code, 404)
        url = reverse("admin:robust_queue_process_command", args=["x", "quiet"])
        self.assertEqual(self.client.post(url).status_code, 404)
