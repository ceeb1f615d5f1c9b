"""The stranded jobs page: paths no task declares, their counts, and the
one-click move to a task (asked first, with the exact count; with the
permission only; audited)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from robust_queue.models import Job, RecurringTask
from testproject import renamed_tasks, tasks
from tests.integration.admin.base import make_staff

# A module renamed (old_renamed_tasks -> renamed_tasks): the closest whole
# path of the declared tasks named "plain", whichever others are imported.
GONE = "testproject.old_renamed_tasks.plain"
TARGET = "testproject.renamed_tasks.plain"
PAGE = "admin:robust_queue_stranded"
MOVE = "admin:robust_queue_stranded_move"


def stranded_job(**using: object) -> Job:
    result = tasks.add.using(**using).enqueue(1, 2)  # type: ignore[arg-type]
    Job.objects.filter(result_id=result.id).update(task_path=GONE)
    return Job.objects.get(result_id=result.id)


class StrandedAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.superuser = User.objects.create_superuser("root", password="pw")
        cls.viewer = make_staff("viewer", "view_job")
        cls.mover = make_staff("mover", "view_job", "change_job")
        cls.jobs = [
            stranded_job(),
            stranded_job(),
            stranded_job(run_after=timezone.now() + timedelta(hours=2)),
        ]
        # Finished history of the old path keeps its path.
        cls.finished = stranded_job()
        Job.objects.filter(pk=cls.finished.pk).update(finished_at=timezone.now())
        cls.finished.ready_execution.delete()
        renamed_tasks.plain  # noqa: B018 - imported: the move's target is declared

    def test_the_page_lists_each_path_with_counts_and_a_preselected_target(self) -> None:
        self.client.force_login(self.mover)
        page = self.client.get(reverse(PAGE))
        self.assertContains(page, f"<code>{GONE}</code>", html=True)
        self.assertContains(page, '<td class="rq-num">3</td>', html=True)
        self.assertContains(page, f'<option value="{TARGET}" selected>{TARGET}</option>', html=True)
        self.assertContains(page, reverse(MOVE))

    def test_a_view_only_user_sees_no_move_and_a_forged_one_is_refused(self) -> None:
        self.client.force_login(self.viewer)
        page = self.client.get(reverse(PAGE))
        self.assertContains(page, f"<code>{GONE}</code>", html=True)
        self.assertNotContains(page, reverse(MOVE))
        asked = self.client.get(reverse(MOVE), {"task": GONE, "to": TARGET})
        self.assertEqual(asked.status_code, 403)
        forged = self.client.post(reverse(MOVE), {"task": GONE, "to": TARGET})
        self.assertEqual(forged.status_code, 403)
        self.assertEqual(Job.objects.filter(task_path=GONE).count(), 4)
        self.assertFalse(LogEntry.objects.exists())

    def test_confirm_then_move_rewrites_the_waiting_jobs_and_is_audited(self) -> None:
        self.client.force_login(self.mover)
        asked = self.client.get(reverse(MOVE), {"task": GONE, "to": TARGET})
        self.assertContains(asked, '<strong id="rq-move-count">3</strong>', html=True)
        self.assertContains(asked, "Yes, move 3 job(s)")
        self.assertEqual(Job.objects.filter(task_path=TARGET).count(), 0)  # asking changes nothing
        done = self.client.post(reverse(MOVE), {"task": GONE, "to": TARGET}, follow=True)
        self.assertRedirects(done, reverse(PAGE))
        message = f"Moved 3 waiting job(s) of {GONE} to task {TARGET}."
        self.assertContains(done, message)
        self.assertContains(done, 'id="rq-no-stranded"')
        self.assertEqual(
            sorted(Job.objects.filter(task_path=TARGET).values_list("pk", flat=True)),
            sorted(job.pk for job in self.jobs),
        )
        self.assertEqual(Job.objects.get(pk=self.finished.pk).task_path, GONE)
        entries = LogEntry.objects.filter(user=self.mover)
        self.assertEqual(entries.filter(object_id=None).get().change_message, message)
        # Few jobs: each job's page lists the move too.
        self.assertEqual(
            sorted(int(e.object_id or 0) for e in entries.exclude(object_id=None)),
            sorted(job.pk for job in self.jobs),
        )

    def test_bad_input_goes_back_with_a_clear_error(self) -> None:
        self.client.force_login(self.superuser)
        cases = {
            "testproject.tasks.ad": "it names no declared task. Did you mean &#x27;testproject.tasks.add&#x27;?",
            "": "Cannot move jobs to &#x27;&#x27;: it names no declared task.",
        }
        for target, error in cases.items():
            with self.subTest(target=target):
                for send in (self.client.get, self.client.post):
                    response = send(reverse(MOVE), {"task": GONE, "to": target}, follow=True)
                    self.assertRedirects(response, reverse(PAGE))
                    self.assertContains(response, error)
        response = self.client.post(
            reverse(MOVE), {"task": "testproject.tasks.add", "to": TARGET}, follow=True
        )
        self.assertContains(response, "are not stranded: task testproject.tasks.add runs them.")
        self.assertEqual(Job.objects.filter(task_path=GONE).count(), 4)
        self.assertFalse(LogEntry.objects.exists())

    def test_recurring_tasks_naming_a_vanished_path_are_listed(self) -> None:
        row = RecurringTask.objects.create(
            key="hourly-gone", schedule="0 * * * *", task_path=GONE, static=False
        )
        self.client.force_login(self.viewer)
        page = self.client.get(reverse(PAGE))
        self.assertContains(page, "Recurring tasks naming a path no task declares")
        self.assertContains(page, reverse("admin:robust_queue_recurringtask_change", args=[row.pk]))

    def test_the_overview_links_to_the_page(self) -> None:
        self.client.force_login(self.viewer)
        overview = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(overview, f'href="{reverse(PAGE)}"')
