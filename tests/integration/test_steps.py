"""Resumable steps in a worker's perform (real database, in process):
finished steps are recorded and skipped by the next attempt, the step it
stopped in starts from its checkpoint, writes are one UPDATE per finished
step and throttled checkpoints, and misuse raises a clear error."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase, override_settings
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.compat import TaskContext
from robust_queue.exceptions import StepError
from robust_queue.models import ClaimedExecution, FailedExecution, Job
from robust_queue.running import progress
from robust_queue.running.performing import perform
from robust_queue.running.steps import CHECKPOINT_MAX_BYTES, write_pending
from testproject import step_tasks, tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, make_process


def steps_writes(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("UPDATE") and re.search(r"SET [\"`]steps[\"`]", q["sql"])
    ]


def ledger(tag: str) -> list[tuple[str, int]]:
    rows = LedgerEntry.objects.filter(key__startswith=f"{tag}:").order_by("pk")
    return [(key.split(":", 1)[1], attempt) for key, attempt in rows.values_list("key", "attempt")]


def perform_next() -> list[str]:
    """Claim and perform the one ready job; the step UPDATEs it sent."""
    [claimed] = claim(process=make_process())
    with CaptureQueriesContext(connection) as queries:
        perform(claimed)
    return steps_writes(queries)


class ResumeTests(TestCase):
    def test_a_retry_skips_the_finished_steps(self) -> None:
        """Step 3 raises: the retry runs step 3 only."""
        result = step_tasks.three_steps_retried.enqueue("r", 2)
        perform_next()
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.steps, {"done": ["download", "process"], "step": None, "cursor": None})
        self.assertEqual(len(job.errors), 1)
        perform_next()
        job.refresh_from_db()
        self.assertIsNotNone(job.finished_at)
        self.assertEqual(
            job.return_value, [None, None, "finished", ["download", "process", "finish"]]
        )
        self.assertEqual(
            ledger("r"),
            [("download", 1), ("process-from-0", 1), ("item-0", 1), ("item-1", 1)]
            + [("finish", 1), ("finish", 2)],
        )

    def test_a_step_that_raises_resumes_from_its_last_checkpoint(self) -> None:
        """Item 3 raises; its checkpoint (3) was waiting for its window and
        is written as the step raises; the retry starts step 2 at item 3."""
        result = step_tasks.three_steps_retried.enqueue("c", 5, fail=False, break_at=3)
        writes = perform_next()
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.steps, {"done": ["download"], "step": "process", "cursor": 3})
        # The download's end, then the checkpoint written as the step raised.
        self.assertEqual(len(writes), 2)
        perform_next()
        job.refresh_from_db()
        self.assertEqual(job.return_value[1:], [5, "finished", ["download", "process", "finish"]])
        second = [what for what, attempt in ledger("c") if attempt == 2]
        self.assertEqual(second, ["process-from-3", "item-3", "item-4", "finish"])

    def test_writes_are_one_update_per_finished_step_and_throttled_checkpoints(self) -> None:
        step_tasks.three_steps.enqueue("w", 5)
        self.assertEqual(len(perform_next()), 3)

    @override_settings(ROBUST_QUEUE={"progress_interval": 0})
    def test_without_a_window_every_checkpoint_is_written(self) -> None:
        step_tasks.three_steps.enqueue("w0", 5)
        self.assertEqual(len(perform_next()), 3 + 5)

    def test_a_task_without_steps_writes_none(self) -> None:
        result = tasks.add.enqueue(1, 2)
        self.assertEqual(perform_next(), [])
        self.assertIsNone(Job.objects.get(result_id=result.id).steps)

    def test_a_failed_job_retried_by_hand_resumes_too(self) -> None:
        """No retry policy: item 2 fails the job; retried from the admin's
        verb, it starts step 2 at item 2."""
        result = step_tasks.three_steps.enqueue("h", 4, break_at=2)
        perform_next()
        failed = FailedExecution.objects.get(job__result_id=result.id)
        self.assertIs(failed.retry(), True)
        perform_next()
        second = [what for what, attempt in ledger("h") if attempt == 2]
        self.assertEqual(second, ["process-from-2", "item-2", "item-3", "finish"])
        self.assertIsNotNone(Job.objects.get(result_id=result.id).finished_at)


class AsyncTaskTests(TestCase):
    def test_an_async_task_is_told_steps_are_for_def_tasks(self) -> None:
        result = step_tasks.async_steps.enqueue()
        perform_next()
        [error] = Job.objects.get(result_id=result.id).errors
        self.assertEqual(error["exception_class_path"], "robust_queue.exceptions.StepError")
        self.assertIn("steps() works in a def task only", error["traceback"])


class RunningContext(TestCase):
    """A job's body as a worker runs it (its claim registered), driven by
    the test."""

    def running(self) -> tuple[ClaimedExecution, TaskContext]:
        result = step_tasks.three_steps.enqueue("x", 1)
        [claimed] = claim(process=make_process())
        context = TaskContext(task_result=result)
        cm = progress.reporting(claimed, result.id)
        cm.__enter__()
        self.addCleanup(cm.__exit__, None, None, None)
        return claimed, context

    def stored(self, claimed: ClaimedExecution) -> Any:
        return Job.objects.get(pk=claimed.job_id).steps


class MisuseTests(RunningContext):
    def test_steps_need_a_task_context(self) -> None:
        result = tasks.add.enqueue(1, 2)
        for wrong in (result, None, "context"):
            with self.assertRaisesMessage(TypeError, "steps() needs the task's TaskContext"):
                robust_queue.steps(wrong)  # type: ignore[arg-type]

    def test_a_name_runs_once(self) -> None:
        _claimed, context = self.running()
        steps = robust_queue.steps(context)
        steps.run("a", lambda step: None)
        with self.assertRaisesMessage(StepError, "Step 'a' already ran in this job"):
            steps.run("a", lambda step: None)
        # The same object for the whole attempt: a second call knows too,
        # even once the first object is dropped.
        del steps
        self.assertEqual(robust_queue.steps(context).done, ("a",))
        with self.assertRaisesMessage(StepError, "Step 'a' already ran"):
            robust_queue.steps(context).run("a", lambda step: None)

    def test_steps_do_not_nest(self) -> None:
        _claimed, context = self.running()
        steps = robust_queue.steps(context)
        message = "Step 'inner' cannot start inside step 'outer': steps do not nest."
        with self.assertRaisesMessage(StepError, message):
            steps.run("outer", lambda step: steps.run("inner", lambda inner: None))

    def test_a_checkpoint_outside_its_step_is_refused(self) -> None:
        _claimed, context = self.running()
        kept = robust_queue.steps(context).run("a", lambda step: step)
        with self.assertRaisesMessage(StepError, "Step 'a' is not running"):
            kept.checkpoint(1)

    def test_bad_names_are_refused(self) -> None:
        _claimed, context = self.running()
        steps = robust_queue.steps(context)
        with self.assertRaisesMessage(TypeError, "A step's name must be a string, not int."):
            steps.run(1, lambda step: None)  # type: ignore[arg-type]
        for name in ("", "x" * 101):
            with self.assertRaisesMessage(ValueError, "A step's name must be 1 to 100 characters"):
                steps.run(name, lambda step: None)

    def test_a_checkpoint_that_cannot_be_stored_raises_and_keeps_the_last_one(self) -> None:
        claimed, context = self.running()
        steps = robust_queue.steps(context)
        errors: list[str] = []

        def body(step: robust_queue.Step) -> None:
            step.checkpoint({"page": 2})
            for bad in (object(), {1: "key"}, "x" * CHECKPOINT_MAX_BYTES):
                try:
                    step.checkpoint(bad)
                except (TypeError, ValueError) as exc:
                    errors.append(str(exc))
            self.assertEqual(step.cursor, {"page": 2})
            raise RuntimeError("stop here")

        with self.assertRaisesMessage(RuntimeError, "stop here"):
            steps.run("pages", body)
        self.assertEqual(len(errors), 3)
        self.assertIn("The checkpoint of step 'pages' of type object cannot be encoded", errors[0])
        self.assertIn("dict keys must be str", errors[1])
        self.assertIn("over the limit of 65536", errors[2])
        self.assertEqual(self.stored(claimed), {"done": [], "step": "pages", "cursor": {"page": 2}})

    def test_checkpoints_encode_as_arguments_do_and_survive_a_release(self) -> None:
        """A model instance and a datetime as a cursor; the job given back
        (as a stopping worker does) keeps it for its next claim."""
        claimed, context = self.running()
        job = Job.objects.get(pk=claimed.job_id)
        cursor = {"job": job, "at": job.enqueued_at}

        def body(step: robust_queue.Step) -> None:
            step.checkpoint(cursor)
            raise RuntimeError("stop")

        with self.assertRaises(RuntimeError):
            robust_queue.steps(context).run("models", body)
        self.assertEqual(self.stored(claimed)["cursor"]["job"]["__rq__"], "model")
        self.assertIs(claimed.release(), True)
        [again] = claim(process=make_process("second"))
        seen: list[Any] = []
        with progress.reporting(again, context.task_result.id):
            robust_queue.steps(context).run("models", lambda step: seen.append(step.cursor))
        self.assertEqual(seen, [cursor])
        self.assertIsInstance(seen[0]["job"], Job)


class OutsideAWorkerTests(TestCase):
    def test_every_step_runs_and_nothing_is_stored(self) -> None:
        result = step_tasks.three_steps.enqueue("o", 1)
        steps = robust_queue.steps(TaskContext(task_result=result))
        seen: list[Any] = []
        self.assertEqual(steps.run("a", lambda step: seen.append(step.cursor) or 7), 7)
        self.assertEqual(steps.done, ("a",))
        self.assertIsNone(Job.objects.get(result_id=result.id).steps)
        with self.assertRaisesMessage(StepError, "Step 'a' already ran"):
            steps.run("a", lambda step: None)


class StopTests(RunningContext):
    def test_a_waiting_checkpoint_is_written_when_the_worker_stops(self) -> None:
        """``write_pending`` (a worker's shutdown) writes the checkpoint
        that waits for its window while the body still runs."""
        claimed, context = self.running()
        steps = robust_queue.steps(context)

        def body(step: robust_queue.Step) -> None:
            step.checkpoint(1)  # written: the first write
            step.checkpoint(2)  # waits for its window
            self.assertEqual(self.stored(claimed)["cursor"], 1)
            write_pending()
            self.assertEqual(self.stored(claimed)["cursor"], 2)

        steps.run("a", body)
        self.assertEqual(self.stored(claimed)["done"], ["a"])


class AdminTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.user = User.objects.create_superuser("root", password="pw")

    def setUp(self) -> None:
        self.client.force_login(self.user)
        self.job = Job.objects.get(result_id=step_tasks.three_steps.enqueue("a", 1).id)

    def page(self, steps: Any) -> str:
        Job.objects.filter(pk=self.job.pk).update(steps=steps)
        response = self.client.get(f"/admin/robust_queue/job/{self.job.pk}/change/")
        self.assertEqual(response.status_code, 200)
        return response.content.decode()

    def test_the_job_page_shows_the_steps_done_and_the_checkpoint(self) -> None:
        html = self.page({"done": ["download", "<b>"], "step": "process", "cursor": {"page": 3}})
        self.assertIn(
            '<td id="rq-job-steps">Done: <code>download</code>, <code>&lt;b&gt;</code>; '
            'stopped in <code>process</code> at <code id="rq-job-checkpoint">'
            "{&quot;page&quot;: 3}</code></td>",
            html,
        )

    def test_a_finished_job_shows_its_steps_done(self) -> None:
        html = self.page({"done": ["a", "b"], "step": None, "cursor": None})
        self.assertIn('<td id="rq-job-steps">Done: <code>a</code>, <code>b</code></td>', html)

    def test_a_secret_in_the_checkpoint_is_masked(self) -> None:
        secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
        html = self.page({"done": [], "step": "s", "cursor": {"api_key": secret, "n": 1}})
        self.assertIn("api_key", html)
        self.assertNotIn(secret, html)

    def test_no_steps_no_row_and_a_hand_edited_column_shows_as_is(self) -> None:
        self.assertNotIn("rq-job-steps", self.page(None))
        self.assertIn('<td id="rq-job-steps"><code>[1, 2]</code></td>', self.page([1, 2]))
