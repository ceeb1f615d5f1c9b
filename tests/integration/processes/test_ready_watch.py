"""The listener of the databases without LISTEN: the dialect's ``listen``
watching the newest ready id (SQLite: only once the file has changed;
MySQL/MariaDB: at every look).

A new ready job, committed by any connection, is a notification; what
does not make a job ready (an empty claim, a heartbeat, a claim that
takes the newest job) is not, and watching writes nothing.
"""

from __future__ import annotations

import threading
from unittest import skipUnless

from django.db import connection, connections
from django.test import TransactionTestCase
from django.utils import timezone

from robust_queue.models import Process, ProcessKind, ReadyExecution
from robust_queue.models.sql import dialect_for
from testproject import tasks
from tests.helpers import claim, run_in_threads


@skipUnless(
    connection.vendor in ("sqlite", "mysql"),
    "PostgreSQL listens for NOTIFY (tests/processes/test_command.py)",
)
class ReadyWatchTests(TransactionTestCase):
    def setUp(self) -> None:
        self.heard = threading.Semaphore(0)
        self.failures: list[Exception] = []
        self.listening = threading.Event()
        self.stop = threading.Event()
        self.watcher = threading.Thread(target=self.watch)
        self.watcher.start()
        self.addCleanup(self.watcher.join, 10)
        self.addCleanup(self.stop.set)
        self.assertTrue(self.listening.wait(10), "the listener never started")

    def watch(self) -> None:
        """What the worker's listener thread runs (``Listener``)."""
        try:
            dialect_for("default").listen(self.stop, self.heard.release, self.listening.set)
        except Exception as exc:  # noqa: BLE001 - the test reads them
            self.failures.append(exc)
        finally:
            connections.close_all()

    def assert_heard(self, times: int) -> None:
        for _ in range(times):
            self.assertTrue(self.heard.acquire(timeout=10), "no notification came")

    def assert_silent(self) -> None:
        """Nothing heard over many of the listener's looks."""
        self.assertFalse(self.heard.acquire(timeout=0.5))

    def test_a_job_made_ready_by_another_connection_is_heard(self) -> None:
        run_in_threads([lambda: tasks.add.enqueue(1, 1)])
        self.assert_heard(1)
        tasks.add.enqueue(2, 2)  # this connection is another one too
        self.assert_heard(1)
        self.assert_silent()
        self.assertEqual(self.failures, [])

    def test_writes_that_make_no_job_ready_are_not_heard(self) -> None:
        tasks.add.enqueue(1, 1)
        self.assert_heard(1)
        [claimed] = claim(1)  # the newest ready row goes
        self.assertEqual(claim(5), [])  # an empty claim: a transaction, no write
        process = Process.objects.register(kind=ProcessKind.WORKER, name="w", pid=1)
        Process.objects.filter(pk=process.pk).update(last_heartbeat_at=timezone.now())
        self.assertIs(claimed.finish(2), True)
        self.assert_silent()
        self.assertEqual(self.failures, [])

    def test_the_listener_stops_when_told(self) -> None:
        self.stop.set()
        self.watcher.join(10)
        self.assertFalse(self.watcher.is_alive())
        self.assertEqual(self.failures, [])

    def test_a_job_after_the_newest_was_claimed_is_heard(self) -> None:
        tasks.add.enqueue(1, 1)
        self.assert_heard(1)
        [claimed] = claim(1)
        self.assert_silent()
        tasks.add.enqueue(2, 2)
        self.assert_heard(1)
        self.assertIs(claimed.finish(2), True)
        self.assertEqual(ReadyExecution.objects.count(), 1)
