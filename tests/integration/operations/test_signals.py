"""Robust Queue's own signals: each sent once, after the change."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.dispatch import Signal
from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue import signals
from robust_queue.compat import task_finished
from robust_queue.models import Job, Process, Queue
from robust_queue.processes.config import WorkerConfig
from robust_queue.processes.worker import Worker
from robust_queue.running.performing import perform
from testproject import control_tasks, tasks
from tests.helpers import claim, make_process


@contextmanager
def received(signal: Signal) -> Iterator[list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []

    def receiver(**kwargs: Any) -> None:
        calls.append(kwargs)

    signal.connect(receiver, weak=False)
    try:
        yield calls
    finally:
        signal.disconnect(receiver)


class QueueSignalTests(TransactionTestCase):
    def test_pause_and_resume_are_sent_once_each(self) -> None:
        queue = Queue("mail")
        with received(signals.queue_paused) as paused, received(signals.queue_resumed) as resumed:
            queue.pause()
            queue.pause()  # already paused: nothing changes, nothing sent
            self.assertEqual([c["queue"] for c in paused], [queue])
            self.assertIs(paused[0]["sender"], Queue)
            queue.resume()
            queue.resume()
            self.assertEqual([c["queue"] for c in resumed], [queue])


class JobSignalTests(TransactionTestCase):
    def test_a_retried_attempt_sends_job_retried_once(self) -> None:
        result = control_tasks.flaky.enqueue("k", succeed_on=2)
        with received(signals.job_retried) as retried:
            [claimed] = claim(process=make_process())
            perform(claimed)
        self.assertEqual(len(retried), 1)
        self.assertEqual(retried[0]["job"].result_id, result.id)
        self.assertEqual(retried[0]["error"]["exception_class_path"], "builtins.ValueError")
        self.assertIsNotNone(retried[0]["retry_at"])

    def test_a_final_failure_sends_no_job_retried(self) -> None:
        tasks.fail.enqueue()
        with received(signals.job_retried) as retried:
            [claimed] = claim(process=make_process())
            perform(claimed)
        self.assertEqual(retried, [])

    def test_discard_sends_job_discarded_per_job(self) -> None:
        first, second = tasks.add.enqueue(1, 2), tasks.add.enqueue(3, 4)
        with received(signals.job_discarded) as discarded:
            Job.objects.filter(result_id=first.id).get().discard()
            self.assertEqual([c["result_id"] for c in discarded], [first.id])
            Job.objects.all().discard_all_in_batches(batch_size=1)
        self.assertEqual([c["result_id"] for c in discarded], [first.id, second.id])
        self.assertEqual(discarded[1]["task_path"], "testproject.tasks.add")
        self.assertEqual(discarded[1]["queue_name"], "default")


class SkippedOutcomeTests(TransactionTestCase):
    def test_no_task_finished_for_an_outcome_that_was_not_recorded(self) -> None:
        """The claim was gone when the body ended (its process was failed
        meanwhile, or a stuck thread's watchdog recorded the job long ago):
        the job's outcome is not this attempt's, so no task_finished."""
        process = make_process()
        result = tasks.add.enqueue(1, 2)
        [claimed] = claim(process=process)
        Process.objects.filter(pk=process.pk).fail_all_claims("gone")
        with received(task_finished) as finished:
            self.assertIs(perform(claimed), False)
        self.assertEqual(finished, [])
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(
            [e["exception_class_path"] for e in job.errors],
            ["robust_queue.exceptions.ProcessExitError"],
        )
        self.assertIsNone(job.return_value)


class ProcessSignalTests(TransactionTestCase):
    def test_a_pruned_process_sends_process_pruned_once(self) -> None:
        stale = make_process("silent")
        Process.objects.filter(pk=stale.pk).update(
            last_heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        with received(signals.process_pruned) as pruned:
            Process.objects.using("default").prune(threshold=60)
            Process.objects.using("default").prune(threshold=60)
        self.assertEqual([c["process"].name for c in pruned], ["silent"])
        self.assertEqual(pruned[0]["failed_jobs"], 0)

    def test_a_process_sends_started_and_stopped_once(self) -> None:
        worker = Worker(
            WorkerConfig(threads=1), shutdown_timeout=1, using="default", heartbeat_interval=60
        )
        with (
            received(signals.process_started) as started,
            received(signals.process_stopped) as stopped,
        ):
            worker.stop()  # one round: boot, then shut down
            worker.start()
        self.assertEqual([c["runnable"] for c in started], [worker])
        self.assertEqual([c["runnable"] for c in stopped], [worker])
        self.assertIs(started[0]["sender"], Worker)
        self.assertEqual(stopped[0]["process"].name, worker.name)
        self.assertFalse(Process.objects.filter(name=worker.name).exists())
