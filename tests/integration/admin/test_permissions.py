"""Who may see and do what: view permission, one permission per action, CSRF."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from robust_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    Pause,
    RecurringTask,
    TaskPause,
)
from tests.integration.admin.base import (
    ACTION_PERMISSIONS,
    VIEW_PERMISSIONS,
    AdminTestCase,
    changelist,
    job_url,
    make_staff,
)

# A bulk action acts once confirmed (the confirmation page fills these in).
CONFIRMED = {"confirm": "yes", "max_pk": 2**62, "count": 1}

PAGES = [
    "admin:robust_queue_overview",
    "admin:robust_queue_concurrency",
    "admin:robust_queue_job_changelist",
    "admin:robust_queue_process_changelist",
    "admin:robust_queue_recurringtask_changelist",
]


class PermissionMatrixTests(AdminTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.nobody = make_staff("nobody")
        cls.actors = {
            codename: make_staff(codename, *VIEW_PERMISSIONS, codename)
            for codename in ACTION_PERMISSIONS
        }
        cls.blind_actors = {
            codename: make_staff(f"blind-{codename}", codename) for codename in ACTION_PERMISSIONS
        }
        cls.recurring = RecurringTask.objects.create(
            key="nightly",
            schedule="0 3 * * *",
            task_path="testproject.tasks.add",
            arguments={"args": [1, 2], "kwargs": {}},
        )

    def _posts(self) -> dict[str, list[tuple[str, dict]]]:
        """Every state-changing request, by the permission it needs."""
        return {
            "retry_job": [
                (job_url("action", self.failed.pk, "retry"), {}),
                (
                    changelist(),
                    {
                        "action": "retry_selected",
                        "_selected_action": [self.failed.pk],
                        "index": 0,
                        **CONFIRMED,
                    },
                ),
            ],
            "discard_job": [
                (job_url("action", self.finished.pk, "discard"), {}),
                (
                    changelist(),
                    {
                        "action": "discard_selected",
                        "_selected_action": [self.ready.pk],
                        "index": 0,
                        **CONFIRMED,
                    },
                ),
            ],
            "run_job_now": [
                (job_url("action", self.scheduled.pk, "run"), {}),
                (
                    changelist(),
                    {
                        "action": "run_selected_now",
                        "_selected_action": [self.blocked.pk],
                        "index": 0,
                        **CONFIRMED,
                    },
                ),
                (reverse("admin:robust_queue_recurringtask_run", args=[self.recurring.pk]), {}),
                (
                    reverse("admin:robust_queue_recurringtask_changelist"),
                    {
                        "action": "run_selected_now",
                        "_selected_action": [self.recurring.pk],
                        "index": 0,
                    },
                ),
            ],
            "cancel_job": [
                (job_url("action", self.running.pk, "cancel"), {}),
                (
                    changelist(),
                    {
                        "action": "cancel_selected",
                        "_selected_action": [self.running.pk],
                        "index": 0,
                        **CONFIRMED,
                    },
                ),
            ],
            "pause_queue": [
                (reverse("admin:robust_queue_queue", args=["pause"]), {"queue": "reports"}),
                (reverse("admin:robust_queue_queue", args=["resume"]), {"queue": "reports"}),
            ],
            "pause_task": [
                (reverse("admin:robust_queue_task", args=["pause"]), {"task": "x.y"}),
                (reverse("admin:robust_queue_task", args=["resume"]), {"task": "x.y"}),
            ],
            "toggle_recurringtask": [
                (_switch(self.recurring.pk, "disable"), {}),
                (_switch(self.recurring.pk, "enable"), {}),
                (
                    reverse("admin:robust_queue_recurringtask_changelist"),
                    {
                        "action": "disable_selected",
                        "_selected_action": [self.recurring.pk],
                        "index": 0,
                    },
                ),
            ],
        }

    def test_anonymous_is_sent_to_login(self) -> None:
        for name in PAGES:
            response = self.client.get(reverse(name))
            self.assertEqual(response.status_code, 302, name)
            self.assertIn(reverse("admin:login"), response["Location"])
        for requests in self._posts().values():
            for url, data in requests:
                response = self.client.post(url, data)
                self.assertEqual(response.status_code, 302, url)
                self.assertIn(reverse("admin:login"), response["Location"])
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), True)

    def test_staff_without_view_permission_is_refused(self) -> None:
        self.login(self.nobody)
        for name in PAGES[:3]:
            self.assertEqual(self.client.get(reverse(name)).status_code, 403, name)
        self.assertEqual(self.client.get(job_url("change", self.failed.pk)).status_code, 403)

    def test_view_only_staff_sees_pages_without_actions(self) -> None:
        self.login(self.viewer)
        for name in PAGES:
            self.assertEqual(self.client.get(reverse(name)).status_code, 200, name)
        overview = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertNotContains(overview, ">Pause</button>")
        jobs = self.client.get(changelist(state="failed"))
        self.assertNotContains(jobs, 'name="action"')
        detail = self.client.get(job_url("change", self.failed.pk))
        self.assertNotContains(detail, "</button></form>")
        recurring = self.client.get(reverse("admin:robust_queue_recurringtask_changelist"))
        self.assertNotContains(recurring, "Run now")

    def test_view_only_staff_forging_any_post_gets_403(self) -> None:
        self.login(self.viewer)
        for codename, requests in self._posts().items():
            for url, data in requests:
                with self.subTest(codename=codename, url=url, action=data.get("action")):
                    self.assertEqual(self.client.post(url, data).status_code, 403)
        self._assert_nothing_changed()

    def test_each_action_permission_allows_only_its_action(self) -> None:
        posts = self._posts()
        for codename, user in self.actors.items():
            self.client.force_login(user)
            for other, requests in posts.items():
                if other == codename:
                    continue
                for url, data in requests:
                    with self.subTest(user=codename, needs=other, url=url):
                        self.assertEqual(self.client.post(url, data).status_code, 403)
        self._assert_nothing_changed()

    def test_each_action_permission_allows_its_action(self) -> None:
        for codename, requests in self._posts().items():
            self.client.force_login(self.actors[codename])
            for url, data in requests:
                with self.subTest(codename=codename, url=url):
                    self.assertEqual(self.client.post(url, data).status_code, 302)
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), False)
        self.assertIs(Job.objects.filter(pk=self.finished.pk).exists(), False)
        self.assertEqual(
            Job.objects.filter(task_path="testproject.tasks.add", finished_at__isnull=True).count(),
            4,
        )

    def test_an_action_permission_without_view_permission_acts_nowhere(self) -> None:
        """Every action endpoint needs the view permission of its page too."""
        for codename, requests in self._posts().items():
            self.client.force_login(self.blind_actors[codename])
            for url, data in requests:
                with self.subTest(codename=codename, url=url, action=data.get("action")):
                    self.assertEqual(self.client.post(url, data).status_code, 403)
        self.client.force_login(self.blind_actors["discard_job"])
        self.assertEqual(
            self.client.get(job_url("action", self.finished.pk, "discard")).status_code, 403
        )
        self._assert_nothing_changed()

    def test_an_action_permission_with_another_page_view_acts_nowhere(self) -> None:
        """view_job does not open the recurring tasks' run button, and back."""
        recurring_only = make_staff("recurring-only", "view_recurringtask", "run_job_now")
        self.client.force_login(recurring_only)
        run_job = job_url("action", self.scheduled.pk, "run")
        self.assertEqual(self.client.post(run_job).status_code, 403)
        jobs_only = make_staff("jobs-only", "view_job", "run_job_now")
        self.client.force_login(jobs_only)
        run = reverse("admin:robust_queue_recurringtask_run", args=[self.recurring.pk])
        self.assertEqual(self.client.post(run).status_code, 403)
        self._assert_nothing_changed()

    def test_action_buttons_follow_permissions(self) -> None:
        self.client.force_login(self.actors["retry_job"])
        detail = self.client.get(job_url("change", self.failed.pk))
        self.assertContains(detail, ">Retry</button>")
        self.assertNotContains(detail, ">Discard</a>")
        jobs = self.client.get(changelist(state="failed"))
        self.assertContains(jobs, 'value="retry_selected"')
        self.assertNotContains(jobs, 'value="discard_selected"')
        self.client.force_login(self.actors["pause_queue"])
        self.assertContains(
            self.client.get(reverse("admin:robust_queue_overview")), ">Pause</button>"
        )

    def test_superuser_sees_every_action(self) -> None:
        self.login()
        jobs = self.client.get(changelist())
        for action in ("retry_selected", "run_selected_now", "cancel_selected", "discard_selected"):
            self.assertContains(jobs, f'value="{action}"')
        self.assertNotContains(jobs, 'value="delete_selected"')

    def _assert_nothing_changed(self) -> None:
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), True)
        self.assertEqual(Job.objects.count(), 6)
        self.assertIs(Pause.objects.exists(), False)
        self.assertIs(
            ClaimedExecution.objects.filter(cancel_requested_at__isnull=False).exists(), False
        )
        self.assertIs(TaskPause.objects.exists(), False)
        self.assertIs(RecurringTask.objects.get(pk=self.recurring.pk).enabled, True)


def _switch(pk: int, verb: str) -> str:
    return reverse("admin:robust_queue_recurringtask_switch", args=[pk, verb])


class CsrfTests(AdminTestCase):
    def test_posts_without_a_csrf_token_are_refused(self) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.superuser)
        for url in (
            job_url("action", self.failed.pk, "retry"),
            reverse("admin:robust_queue_queue", args=["pause"]),
        ):
            self.assertEqual(client.post(url, {"queue": "reports"}).status_code, 403, url)
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), True)

    def test_posts_with_the_page_token_work(self) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.superuser)
        page = client.get(job_url("change", self.failed.pk))
        token = page.context["csrf_token"]
        response = client.post(
            job_url("action", self.failed.pk, "retry"), {"csrfmiddlewaretoken": str(token)}
        )
        self.assertEqual(response.status_code, 302)
        self.assertIs(FailedExecution.objects.filter(job=self.failed).exists(), False)
