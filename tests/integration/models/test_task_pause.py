"""Pausing a task: its jobs stay ready, other tasks' jobs are claimed."""

from __future__ import annotations

import threading
import time

from django.db import connection
from django.test import TestCase, TransactionTestCase

import robust_queue
from robust_queue.exceptions import InvalidTaskPathError
from robust_queue.models import Job, ReadyExecution, TaskPause
from robust_queue.processes.selector import QueueSelector
from testproject import tasks
from tests.helpers import run_in_threads

ADD = "testproject.tasks.add"
ECHO = "testproject.tasks.echo"


def _claim(paused_tasks: tuple[str, ...] | None, limit: int = 100) -> list[str]:
    rows = ReadyExecution.objects.claim(
        limit, process_id=None, worker_id="w", paused_tasks=paused_tasks
    )
    return [row.job.task_path for row in rows]


class TaskPauseTests(TestCase):
    def setUp(self) -> None:
        tasks.add.enqueue(1, 2)
        tasks.echo.enqueue("x")

    def test_a_paused_tasks_job_stays_ready_while_others_are_claimed(self) -> None:
        self.assertIs(TaskPause.objects.pause(ADD), True)
        self.assertEqual(_claim((ADD,)), [ECHO])
        self.assertEqual(_claim((ADD,)), [])
        self.assertEqual(
            list(ReadyExecution.objects.values_list("job__task_path", flat=True)), [ADD]
        )

    def test_a_claim_that_does_not_say_what_it_knows_checks_every_job(self) -> None:
        TaskPause.objects.pause(ADD)
        self.assertEqual(_claim(None), [ECHO])

    def test_a_claim_whose_read_predates_the_pause_takes_nothing(self) -> None:
        """A worker that read no task pause claims nothing once one exists:
        the pause is read again in the claim's own snapshot."""
        TaskPause.objects.pause(ADD)
        self.assertEqual(_claim(()), [])
        self.assertEqual(ReadyExecution.objects.count(), 2)

    def test_resume_lets_the_job_run(self) -> None:
        TaskPause.objects.pause(ADD)
        _claim((ADD,))
        self.assertIs(TaskPause.objects.resume(ADD), True)
        self.assertEqual(_claim((ADD,)), [ADD])
        self.assertIs(TaskPause.objects.resume(ADD), False)

    def test_a_pause_is_not_a_pause_of_another_case(self) -> None:
        TaskPause.objects.pause("testproject.tasks.ADD")
        self.assertEqual(sorted(_claim(None)), [ADD, ECHO])

    def test_look_alike_task_paths_are_distinct_pauses(self) -> None:
        for path in (ADD, "testproject.tasks.ADD", "testproject.tasks.add "):
            self.assertIs(TaskPause.objects.pause(path), True)
        self.assertEqual(TaskPause.objects.count(), 3)
        self.assertIs(TaskPause.objects.resume("testproject.tasks.ADD"), True)
        self.assertIs(TaskPause.objects.is_paused(ADD), True)

    def test_pausing_twice_keeps_one_row(self) -> None:
        TaskPause.objects.pause(ADD)
        self.assertIs(TaskPause.objects.pause(ADD), False)
        self.assertEqual(TaskPause.objects.count(), 1)

    def test_a_bad_task_path_is_refused_by_name(self) -> None:
        with self.assertRaisesMessage(InvalidTaskPathError, "must be a non-empty string, not ''"):
            TaskPause.objects.pause("")
        with self.assertRaisesMessage(InvalidTaskPathError, "is 300 characters long"):
            TaskPause.objects.pause("a" * 300)
        with self.assertRaisesMessage(InvalidTaskPathError, "not None"):
            TaskPause.objects.resume(None)  # type: ignore[arg-type]
        self.assertFalse(TaskPause.objects.exists())

    def test_the_selector_reads_queue_and_task_pauses_in_one_query(self) -> None:
        TaskPause.objects.pause(ADD)
        from robust_queue.models import Queue

        Queue("reports", using="default").pause()
        selector = QueueSelector(("*",), using="default")
        with self.assertNumQueries(1):
            plan = selector.plan()
        self.assertEqual(plan, [(None, ("reports",))])
        self.assertEqual(selector.paused_tasks, (ADD,))


class TaskPauseRaceTests(TransactionTestCase):
    """No claim that starts after ``pause`` returned takes the task's job."""

    def test_no_claim_started_after_the_pause_takes_a_paused_job(self) -> None:
        robust_queue.enqueue_all(
            [
                call
                for i in range(1000)
                for call in ((tasks.echo, (i,), {}), (tasks.add, (i, i), {}))
            ]
        )
        paused_at: list[float] = []
        stop = threading.Event()

        def claimer(known: tuple[str, ...]) -> list[tuple[float, list[str]]]:
            seen = []
            while not stop.is_set():
                started = time.monotonic()
                seen.append((started, _claim(known, limit=2)))
            connection.close()
            return seen

        def pauser() -> list[tuple[float, list[str]]]:
            time.sleep(0.02)
            TaskPause.objects.pause(ADD)
            paused_at.append(time.monotonic())
            time.sleep(0.3)
            stop.set()
            connection.close()
            return []

        results = run_in_threads([lambda: claimer(()), lambda: claimer((ADD,)), pauser], timeout=60)
        late = [
            path
            for seen in results
            for started, paths in seen
            if started > paused_at[0]
            for path in paths
        ]
        self.assertNotIn(ADD, late)
        self.assertTrue(Job.objects.filter(task_path=ADD, ready_execution__isnull=False).exists())
