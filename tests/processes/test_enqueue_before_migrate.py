"""Enqueueing into a database that was never migrated names the fix.

A newcomer who forgets ``manage.py migrate`` and enqueues gets
``QueueNotMigratedError`` saying "Run `python manage.py migrate` first",
from every way of enqueueing, instead of the database's raw "relation
robust_queue_job does not exist". Each vendor's dialect recognises its own
missing-table error (``models/sql``); the check runs only once a statement
has failed.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.test import TransactionTestCase

from .test_first_run import manage

SCRIPT = """
import robust_queue
from robust_queue.exceptions import QueueNotMigratedError
from testproject.tasks import add, report

calls = {
    "enqueue": lambda: add.enqueue(1, 2),
    "enqueue_all": lambda: robust_queue.enqueue_all([(add, (1, 2), {}), (report, (3,), {})]),
    "enqueue_once": lambda: robust_queue.enqueue_once(add, "request-1", 1, 2),
    "enqueue_after": lambda: robust_queue.enqueue_after(["x" * 32], add, (1, 2)),
    "batch": lambda: robust_queue.batch().__enter__(),
}
for name, call in calls.items():
    try:
        call()
    except QueueNotMigratedError as exc:
        print(name, "->", "QueueNotMigratedError:", exc)
        assert isinstance(exc.__cause__, Exception), name
    else:
        print(name, "-> no error")
"""


class EnqueueBeforeMigrateTests(TransactionTestCase):
    def test_every_way_of_enqueueing_names_migrate(self) -> None:
        """An empty database (this vendor's): each enqueue raises
        QueueNotMigratedError naming the command, never the raw error."""
        done = self.run_in_empty_database(SCRIPT)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        lines = [line for line in done.stdout.splitlines() if " -> " in line]
        self.assertEqual(
            [line.split(" ->")[0] for line in lines],
            ["enqueue", "enqueue_all", "enqueue_once", "enqueue_after", "batch"],
        )
        for line in lines:
            with self.subTest(line=line.split(" ->")[0]):
                self.assertIn("-> QueueNotMigratedError: The queue's tables are missing", line)
                self.assertIn("Run `python manage.py migrate` first.", line)
        self.assertNotIn("Traceback", done.stderr)

    def run_in_empty_database(self, script: str) -> subprocess.CompletedProcess[str]:
        return manage("shell", "-c", script, ROBUST_QUEUE_DB_NAME=self.empty_database())

    def empty_database(self) -> str:
        """A database of this test's vendor with no table in it."""
        if connection.vendor == "sqlite":
            return str(Path(tempfile.mkdtemp()) / "never_migrated.sqlite3")
        name = f"rq_never_migrated{settings.DATABASES['default']['NAME'][-12:]}".replace("-", "_")
        name = "".join(c for c in name if c.isalnum() or c == "_")
        create = "CREATE DATABASE {}"
        if connection.vendor == "mysql":
            create += " CHARACTER SET utf8mb4"
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
            cursor.execute(create.format(name))
        self.addCleanup(self.drop, name)
        return name

    def drop(self, name: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
