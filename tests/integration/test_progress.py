"""A running job's progress: throttled writes, the last value kept, the
claim's fence, the reader and the admin (real database, in process)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase, override_settings
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.compat import TaskContext, TaskResultStatus
from robust_queue.models import ClaimedExecution, Job
from robust_queue.running import progress as progress_module
from robust_queue.running.performing import perform
from testproject import progress_tasks, tasks
from tests.helpers import claim, make_process


def progress_writes(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("UPDATE") and "progress" in q["sql"]
    ]


class ThrottleTests(TestCase):
    def run_job(self, total: int) -> tuple[Job, list[str]]:
        result = progress_tasks.count_to.enqueue(total, "rows")
        [claimed] = claim()
        with CaptureQueriesContext(connection) as queries:
            self.assertIs(perform(claimed), True)
        return Job.objects.get(result_id=result.id), progress_writes(queries)

    def test_a_tight_loop_writes_once_in_the_window_and_its_last_value_at_the_end(self) -> None:
        """500 calls well inside the default 2 s window: the first call
        writes, the others only keep their value, and the last one is
        written as the body ends, before the job is finalized."""
        job, writes = self.run_job(500)
        self.assertEqual(len(writes), 2)
        self.assertEqual(job.return_value[:2], [True, False])
        self.assertNotIn(True, job.return_value[1:])
        self.assertEqual(
            {key: job.progress[key] for key in ("done", "total", "note")},
            {"done": 500, "total": 500, "note": "rows"},
        )
        self.assertIsNotNone(job.finished_at)

    @override_settings(ROBUST_QUEUE={"progress_interval": 0})
    def test_no_interval_writes_every_call(self) -> None:
        job, writes = self.run_job(20)
        self.assertEqual(len(writes), 20)
        self.assertEqual(job.return_value, [True] * 20)
        self.assertEqual(job.progress["done"], 20)

    def test_a_job_that_reports_nothing_writes_no_progress(self) -> None:
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim()
        with CaptureQueriesContext(connection) as queries:
            perform(claimed)
        self.assertEqual(progress_writes(queries), [])
        self.assertIsNone(Job.objects.get(result_id=result.id).progress)
        self.assertIsNone(robust_queue.progress_of(result))

    def test_an_async_task_reports_with_aprogress(self) -> None:
        result = progress_tasks.async_count_to.enqueue(30)
        [claimed] = claim()
        perform(claimed)
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.return_value, 30)
        self.assertEqual((job.progress["done"], job.progress["total"]), (30, 30))


class FenceTests(TestCase):
    def running(self) -> tuple[ClaimedExecution, TaskContext]:
        result = progress_tasks.count_to.enqueue(1)
        [claimed] = claim(process=make_process())
        return claimed, TaskContext(task_result=result)

    def test_a_write_after_the_claim_is_gone_writes_nothing_and_raises_nothing(self) -> None:
        claimed, context = self.running()
        with progress_module.reporting(claimed, context.task_result.id):
            self.assertIs(robust_queue.progress(context, 1, 10), True)
            ClaimedExecution.objects.filter(pk=claimed.pk).delete()
            with override_settings(ROBUST_QUEUE={"progress_interval": 0}):
                self.assertIs(robust_queue.progress(context, 5, 10), False)
                # Known gone: no further statement.
                with CaptureQueriesContext(connection) as queries:
                    self.assertIs(robust_queue.progress(context, 6, 10), False)
                self.assertEqual(queries.captured_queries, [])
        stored = Job.objects.get(pk=claimed.job_id).progress
        self.assertEqual(stored["done"], 1)

    def test_the_fence_is_the_claim_row_not_the_job(self) -> None:
        """Another claim of the same job (run again) is not this one."""
        claimed, _context = self.running()
        written = Job.objects.record_progress(claimed.job_id, claimed.pk + 1000, {"done": 1})
        self.assertIs(written, False)
        self.assertIs(Job.objects.record_progress(claimed.job_id, claimed.pk, {"done": 1}), True)

    def test_outside_a_worker_progress_does_nothing(self) -> None:
        result = progress_tasks.count_to.enqueue(1)
        self.assertIs(robust_queue.progress(TaskContext(task_result=result), 1, 2), False)
        self.assertIsNone(Job.objects.get(result_id=result.id).progress)

    def test_bad_values_raise_naming_the_problem(self) -> None:
        claimed, context = self.running()
        with progress_module.reporting(claimed, context.task_result.id):
            for args, message in [
                ((-1,), "done must be a number of at least 0, not -1"),
                (("3",), "done must be a number of at least 0, not '3'"),
                ((True,), "done must be a number of at least 0, not True"),
                ((float("nan"),), "done must be a number of at least 0, not nan"),
                ((1, 0), "total must be None or a number above 0, not 0"),
            ]:
                with self.subTest(args=args), self.assertRaisesMessage(ValueError, message):
                    robust_queue.progress(context, *args)
            with self.assertRaisesMessage(TypeError, "note must be a string, not int"):
                robust_queue.progress(context, 1, 2, 3)
            with self.assertRaisesMessage(TypeError, "takes_context=True"):
                robust_queue.progress("context", 1)
        self.assertIsNone(Job.objects.get(pk=claimed.job_id).progress)

    def test_a_long_note_is_cut(self) -> None:
        claimed, context = self.running()
        with progress_module.reporting(claimed, context.task_result.id):
            robust_queue.progress(context, 1, None, "x" * 500)
        read = robust_queue.progress_of(context.task_result)
        self.assertEqual(read.note, "x" * progress_module.NOTE_MAX_CHARS)
        self.assertIsNone(read.total)
        self.assertIsNone(read.fraction)


class ReaderTests(TestCase):
    def test_progress_of_a_result_from_get_result(self) -> None:
        result = progress_tasks.count_to.enqueue(4, "files")
        [claimed] = claim()
        perform(claimed)
        fetched = progress_tasks.count_to.get_result(result.id)
        self.assertEqual(fetched.status, TaskResultStatus.SUCCESSFUL)
        read = robust_queue.progress_of(fetched)
        self.assertEqual((read.done, read.total, read.note), (4, 4, "files"))
        self.assertEqual(read.fraction, 1.0)
        self.assertIsNotNone(read.at)

    def test_a_hand_edited_column_reads_as_none(self) -> None:
        result = tasks.add.enqueue(1, 2)
        for value in ["text", {"done": "x"}, {"done": 1, "total": "y"}, [1, 2]]:
            Job.objects.filter(result_id=result.id).update(progress=value)
            with self.subTest(value=value):
                self.assertIsNone(robust_queue.progress_of(result))


class AdminTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.user = User.objects.create_superuser("root", password="pw")

    def setUp(self) -> None:
        self.client.force_login(self.user)
        result = progress_tasks.count_to.enqueue(1)
        [self.claimed] = claim(process=make_process())
        Job.objects.filter(result_id=result.id).update(
            progress={"done": 420, "total": 1000, "note": "<b>rows</b>", "at": None}
        )

    def test_the_running_list_shows_figures_note_and_bar(self) -> None:
        response = self.client.get("/admin/robust_queue/job/?state=claimed")
        self.assertContains(response, '<th scope="col" class="column-progress_shown">')
        self.assertContains(response, '<progress max="1" value="0.4200"></progress> 420 / 1,000')
        self.assertContains(response, " — &lt;b&gt;rows&lt;/b&gt;")

    def test_the_job_page_shows_it(self) -> None:
        response = self.client.get(f"/admin/robust_queue/job/{self.claimed.job_id}/change/")
        self.assertContains(response, '<td id="rq-job-progress">')
        self.assertContains(response, "420 / 1,000")

    def test_a_secret_in_the_note_is_masked_on_the_list_and_the_page(self) -> None:
        secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
        Job.objects.filter(pk=self.claimed.job_id).update(
            progress={"done": 1, "total": 2, "note": f"api_key={secret}", "at": None}
        )
        for url in (
            "/admin/robust_queue/job/?state=claimed",
            f"/admin/robust_queue/job/{self.claimed.job_id}/change/",
        ):
            with self.subTest(url=url):
                response = self.client.get(url)
                self.assertContains(response, "api_key=")
                self.assertNotContains(response, secret)

    def test_no_progress_no_row(self) -> None:
        Job.objects.filter(pk=self.claimed.job_id).update(progress=None)
        response = self.client.get(f"/admin/robust_queue/job/{self.claimed.job_id}/change/")
        self.assertNotContains(response, "rq-job-progress")
