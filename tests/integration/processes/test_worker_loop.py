"""A worker's life in this process (as in thread mode): it claims, runs and
finishes jobs in its pool, recycles itself at max_jobs, keeps to its
queues, and gives back what it did not start when it stops. The real test
database; tests/processes runs workers as real processes."""

from __future__ import annotations

import threading
from typing import Any

from django.db import connection
from django.test import TransactionTestCase

from robust_queue import signals
from robust_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from robust_queue.processes.config import WorkerConfig
from robust_queue.processes.listener import Listener
from robust_queue.processes.worker import Worker
from testproject import tasks
from tests.helpers import wait_until


def finished(*result_ids: str) -> bool:
    return Job.objects.filter(result_id__in=result_ids, finished_at__isnull=False).count() == len(
        result_ids
    )


class WorkerLoopTests(TransactionTestCase):
    def start(self, **config: Any) -> tuple[Worker, threading.Thread]:
        settings = {"polling_interval": 0.05, "idle_polling_ceiling": 0.05, **config}
        worker = Worker(
            WorkerConfig(**settings), shutdown_timeout=2, using="default", heartbeat_interval=60
        )
        thread = threading.Thread(target=worker.start, name="test-worker", daemon=True)
        thread.start()
        self.addCleanup(self._stop, worker, thread)
        return worker, thread

    @staticmethod
    def _stop(worker: Worker, thread: threading.Thread) -> None:
        worker.stop()
        thread.join(timeout=30)
        worker.wakeup.close()
        connection.close()

    def test_it_runs_ready_jobs_and_deregisters_when_stopped(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(4)]
        worker, thread = self.start(threads=2)
        wait_until(lambda: finished(*(r.id for r in results)), timeout=60)
        self.assertEqual(sorted(Job.objects.values_list("return_value", flat=True)), [0, 2, 4, 6])
        worker.stop()
        thread.join(timeout=30)
        self.assertFalse(thread.is_alive())
        self.assertFalse(Process.objects.filter(kind="worker").exists())

    def test_it_keeps_to_its_queues(self) -> None:
        mine = tasks.add.using(queue_name="mine").enqueue(1, 1)
        other = tasks.add.using(queue_name="other").enqueue(2, 2)
        self.start(queues=("mine",))
        wait_until(lambda: finished(mine.id), timeout=60)
        # A later job of its queue proves a later poll that skipped "other".
        later = tasks.add.using(queue_name="mine").enqueue(3, 3)
        wait_until(lambda: finished(later.id), timeout=60)
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=other.id).exists())

    def test_max_jobs_recycles_it_once_its_jobs_are_done(self) -> None:
        results = [tasks.add.enqueue(n, n) for n in range(3)]
        worker, thread = self.start(threads=1, max_jobs=2)
        thread.join(timeout=60)
        self.assertFalse(thread.is_alive(), "it stops by itself")
        self.assertEqual(worker.recycled, "max_jobs reached: 2 job(s) claimed")
        self.assertEqual(worker.claimed_count, 2)
        self.assertTrue(finished(results[0].id, results[1].id))
        self.assertTrue(ReadyExecution.objects.filter(job__result_id=results[2].id).exists())
        self.assertFalse(ClaimedExecution.objects.exists())

    def test_its_listener_runs_unless_it_says_listen_false(self) -> None:
        quiet, _ = self.start(listen=False)
        wait_until(lambda: Process.objects.filter(kind="worker").exists(), timeout=30)
        self.assertIsNone(quiet.listener)
        booted: list[object] = []

        def on_started(runnable: object, **kwargs: Any) -> None:
            booted.append(runnable)

        # Registered is not booted: the listener starts in boot(), after
        # the row exists (a loaded machine once read it in between).
        signals.process_started.connect(on_started, weak=False)
        self.addCleanup(signals.process_started.disconnect, on_started)
        listening, _ = self.start()
        wait_until(lambda: listening in booted, timeout=30)
        # An in-memory SQLite database has no listener to run.
        self.assertEqual(listening.listener is not None, Listener.is_supported("default"))

    def test_its_row_says_what_it_polls(self) -> None:
        worker, _ = self.start(queues=("mail*", "default"), threads=4, max_jobs=100)
        wait_until(lambda: Process.objects.filter(kind="worker").exists(), timeout=30)
        row = Process.objects.get(kind="worker")
        self.assertEqual(row.metadata["queues"], ["mail*", "default"])
        self.assertEqual((row.metadata["threads"], row.metadata["max_jobs"]), (4, 100))
        self.assertEqual(row.name, worker.name)
