"""Naming the process that holds a SQLite database's write lock
(``sql/sqlite_writer.py``): real locks taken by another process, in WAL
and rollback-journal mode, and the kernel's list read as it is written."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from django.test import SimpleTestCase

from robust_queue.models.sql.sqlite_writer import write_lock_holder

HOLD = (
    "import sqlite3, sys, time\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "c.execute('INSERT INTO t VALUES (1)')\n"
    "print('holding', flush=True)\n"
    "time.sleep(60)\n"
)


class WriteLockHolderTests(SimpleTestCase):
    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.path = str(Path(directory.name) / "queue.sqlite3")

    def database(self, journal_mode: str) -> None:
        with sqlite3.connect(self.path) as connection:
            connection.execute(f"PRAGMA journal_mode={journal_mode}")
            connection.execute("CREATE TABLE t (x)")
        # WAL keeps its -shm file while a connection is open.
        self.keeper = sqlite3.connect(self.path)
        self.addCleanup(self.keeper.close)

    def holder(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLD, self.path], stdout=subprocess.PIPE, text=True
        )
        self.addCleanup(process.wait)
        self.addCleanup(process.kill)
        assert process.stdout is not None
        self.assertEqual(process.stdout.readline(), "holding\n")
        return process

    def test_the_writer_is_named_in_wal_mode(self) -> None:
        self.database("WAL")
        self.assertIsNone(write_lock_holder(self.path))
        process = self.holder()
        self.assertEqual(write_lock_holder(self.path), process.pid)
        process.kill()
        process.wait()
        self.assertIsNone(write_lock_holder(self.path))

    def test_the_writer_is_named_in_rollback_journal_mode(self) -> None:
        self.database("DELETE")
        process = self.holder()
        self.assertEqual(write_lock_holder(self.path), process.pid)

    def test_a_reader_is_not_named(self) -> None:
        self.database("WAL")
        reader = sqlite3.connect(self.path, isolation_level=None)
        self.addCleanup(reader.close)
        reader.execute("BEGIN")
        reader.execute("SELECT * FROM t").fetchall()
        self.assertIsNone(write_lock_holder(self.path))

    def test_waiters_and_other_files_are_not_named(self) -> None:
        self.database("WAL")
        stat = os.stat(f"{self.path}-shm")
        key = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
        other = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino + 1}"
        locks = Path(self.path).with_name("locks")
        locks.write_text(
            f"1: POSIX  ADVISORY  WRITE 4001 {other} 120 120\n"
            f"1: -> POSIX  ADVISORY  WRITE 4002 {key} 120 120\n"
            f"2: POSIX  ADVISORY  READ 4003 {key} 120 120\n"
            f"3: POSIX  ADVISORY  WRITE 4004 {key} 121 121\n"
        )
        self.assertIsNone(write_lock_holder(self.path, locks))
        with locks.open("a") as more:
            more.write(f"4: POSIX  ADVISORY  WRITE 4005 {key} 120 120\n")
        self.assertEqual(write_lock_holder(self.path, locks), 4005)

    def test_nothing_is_named_without_the_files_or_the_list(self) -> None:
        self.assertIsNone(write_lock_holder(self.path))
        self.database("WAL")
        self.assertIsNone(write_lock_holder(self.path, Path(self.path).with_name("absent")))
