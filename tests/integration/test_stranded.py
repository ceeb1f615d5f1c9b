"""Jobs whose task path no task declares: counted per path by the start-up
check, moved to a task by ``operations.stranded.move``; jobs naming an
alias run the task and read back with ``get_result``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from robust_queue.compat import TaskResultStatus, task_backends
from robust_queue.exceptions import InvalidTaskPathError, UnknownTaskError
from robust_queue.models import ClaimedExecution, Job, RecurringTask
from robust_queue.operations import startup, stranded
from robust_queue.processes.config import SupervisorConfig, WorkerConfig
from testproject import renamed_tasks, tasks
from testproject.models import LedgerEntry
from tests.helpers import claim, make_process, work_off
from tests.integration.admin.base import block

GONE = "testproject.gone_module.vanished"
ALSO_GONE = "testproject.gone_module.lost"
CONFIG = replace(SupervisorConfig(), workers=(WorkerConfig(queues=("*",)),))


def stranded_job(task_path: str, **using: object) -> Job:
    """A job enqueued under ``task_path`` before its task went away."""
    result = tasks.add.using(**using).enqueue(1, 2)  # type: ignore[arg-type]
    Job.objects.filter(result_id=result.id).update(task_path=task_path)
    return Job.objects.get(result_id=result.id)


def set_path(result_id: str, task_path: str) -> Job:
    Job.objects.filter(result_id=result_id).update(task_path=task_path)
    return Job.objects.get(result_id=result_id)


class AliasedJobTests(TestCase):
    def test_a_job_naming_an_old_path_runs_the_renamed_task(self) -> None:
        result = renamed_tasks.record_entry.enqueue("via-alias")
        set_path(result.id, renamed_tasks.OLD_RECORD)
        self.assertEqual(work_off(), 1)
        self.assertEqual(list(LedgerEntry.objects.values_list("key", flat=True)), ["via-alias"])
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.task_path, renamed_tasks.OLD_RECORD)  # history keeps its path
        # Read back through the old row: the new task, and its own get_result.
        for read in (task_backends["default"].get_result, renamed_tasks.record_entry.get_result):
            with self.subTest(read=read):
                back = read(result.id)
                self.assertEqual(back.status, TaskResultStatus.SUCCESSFUL)
                self.assertEqual(back.return_value, "recorded via-alias")
                self.assertEqual(back.task.func, renamed_tasks.record_entry.func)

    def test_an_old_path_s_jobs_are_retried_with_the_task_s_policy(self) -> None:
        result = renamed_tasks.flaky.enqueue("retried")
        set_path(result.id, renamed_tasks.OLD_FLAKY)
        work_off()
        work_off()
        back = renamed_tasks.flaky.get_result(result.id)
        self.assertEqual(back.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(back.return_value, "second attempt of retried")
        self.assertEqual(len(back.errors), 1)

    def test_a_job_of_a_vanished_path_fails_and_reads_back_as_unrunnable(self) -> None:
        job = stranded_job(GONE)
        work_off()
        back = task_backends["default"].get_result(job.result_id)
        self.assertEqual(back.status, TaskResultStatus.FAILED)
        self.assertIn("UnknownTaskError", back.errors[-1].exception_class_path)


class CountTests(TestCase):
    def test_queued_jobs_of_undeclared_paths_are_counted_per_path(self) -> None:
        ready = stranded_job(GONE)
        stranded_job(GONE, run_after=timezone.now() + timedelta(hours=1))  # scheduled
        block(stranded_job(GONE), "key-1")
        running = stranded_job(GONE, queue_name="slow")
        claim(queue_name="slow", process=make_process())
        stranded_job(ALSO_GONE)
        # Not stranded: finished and failed history, aliases, declared tasks.
        failed = stranded_job(ALSO_GONE, queue_name="doomed")
        claim(queue_name="doomed", process=make_process("other"))
        ClaimedExecution.objects.filter(job=failed).fail_all_with(RuntimeError, "x")
        set_path(renamed_tasks.record_entry.enqueue("k").id, renamed_tasks.OLD_RECORD)
        tasks.add.enqueue(1, 1)
        self.assertTrue(Job.objects.get(pk=running.pk).claimed_execution)
        with CaptureQueriesContext(connection) as queries:
            found = stranded.stranded_jobs("default")
        self.assertEqual(
            found,
            [
                stranded.StrandedPath(ALSO_GONE, waiting=1, running=0),
                stranded.StrandedPath(GONE, waiting=3, running=1),
            ],
        )
        self.assertEqual(len(queries), 1)  # one grouped query
        self.assertEqual(stranded.waiting_jobs("default", GONE).count(), 3)
        self.assertIn(ready.pk, stranded.waiting_jobs("default", GONE).values_list("pk", flat=True))

    def test_the_start_up_check_warns_with_counts_per_path(self) -> None:
        self.assertEqual(startup.stranded_warnings("default"), [])
        for _ in range(3):
            stranded_job(GONE)
        stranded_job(ALSO_GONE)
        RecurringTask.objects.create(
            key="nightly-gone", schedule="0 3 * * *", task_path=GONE, static=False
        )
        # A declared schedule's row is rewritten by its scheduler: not counted.
        RecurringTask.objects.create(key="static-gone", schedule="0 3 * * *", task_path=GONE)
        [warning] = [m for m in startup.check(CONFIG) if m.id == "robust_queue.W027"]
        self.assertIn(f"'{GONE}': 3 job(s)", warning.msg)
        self.assertIn(f"'{ALSO_GONE}': 1 job(s)", warning.msg)
        self.assertIn(f"'{GONE}': recurring task(s) nightly-gone", warning.msg)
        self.assertNotIn("static-gone", warning.msg)
        self.assertIn("@aliases('old.module.name')", warning.hint or "")
        self.assertFalse(warning.is_serious())

    def test_jobs_of_aliases_are_not_stranded(self) -> None:
        set_path(renamed_tasks.record_entry.enqueue("k").id, renamed_tasks.OLD_RECORD_TOO)
        self.assertEqual(stranded.stranded_jobs("default"), [])
        self.assertEqual(startup.stranded_warnings("default"), [])


class MoveTests(TestCase):
    def test_move_rewrites_the_waiting_jobs_only_in_one_transaction(self) -> None:
        ready = stranded_job(GONE)
        scheduled = stranded_job(GONE, run_after=timezone.now() + timedelta(hours=1))
        blocked = block(stranded_job(GONE), "key-2")
        running = stranded_job(GONE, queue_name="slow")
        claim(queue_name="slow", process=make_process())
        target = "testproject.renamed_tasks.plain"
        moved = stranded.move("default", GONE, target)
        self.assertEqual(moved, 3)
        paths = dict(Job.objects.values_list("pk", "task_path"))
        self.assertEqual(
            [paths[job.pk] for job in (ready, scheduled, blocked, running)],
            [target, target, target, GONE],
        )
        self.assertEqual(stranded.stranded_jobs("default"), [stranded.StrandedPath(GONE, 0, 1)])
        # The moved jobs run the target task with their own arguments.
        work_off()
        self.assertEqual(renamed_tasks.plain.get_result(ready.result_id).return_value, "plain 1,2")

    def test_a_target_that_is_no_declared_task_is_refused_clearly(self) -> None:
        stranded_job(GONE)
        with self.assertRaisesMessage(
            UnknownTaskError,
            "Cannot move jobs to 'testproject.tasks.ad': it names no declared task. "
            "Did you mean 'testproject.tasks.add'?",
        ):
            stranded.move("default", GONE, "testproject.tasks.ad")
        with self.assertRaisesMessage(
            UnknownTaskError,
            "It is an alias of task testproject.renamed_tasks.record_entry: move them there.",
        ):
            stranded.move("default", GONE, renamed_tasks.OLD_RECORD)
        self.assertEqual(Job.objects.get().task_path, GONE)

    def test_jobs_a_task_runs_are_not_moved(self) -> None:
        tasks.add.enqueue(1, 1)
        with self.assertRaisesMessage(
            InvalidTaskPathError,
            "Jobs of 'testproject.tasks.add' are not stranded: task testproject.tasks.add runs them.",
        ):
            stranded.move("default", "testproject.tasks.add", "testproject.renamed_tasks.plain")
        with self.assertRaisesMessage(InvalidTaskPathError, "through its @aliases"):
            stranded.move("default", renamed_tasks.OLD_RECORD, "testproject.renamed_tasks.plain")

    def test_the_suggestion_is_the_same_name_in_another_module(self) -> None:
        targets = stranded.task_paths()
        self.assertEqual(
            stranded.suggestion("testproject.old_place.plain", targets),
            "testproject.renamed_tasks.plain",
        )
        self.assertEqual(
            stranded.suggestion("testproject.tasks.reprot", targets), "testproject.tasks.report"
        )
        self.assertIsNone(stranded.suggestion(GONE, targets))
