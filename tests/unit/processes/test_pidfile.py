"""The supervisor's pidfile (no database)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from django.test import SimpleTestCase

from robust_queue.exceptions import ConfigurationError
from robust_queue.processes.pidfile import Pidfile


def dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class PidfileTests(SimpleTestCase):
    def setUp(self) -> None:
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.path = Path(directory.name) / "run" / "supervisor.pid"

    def test_acquire_writes_our_pid_and_release_removes_it(self) -> None:
        """Missing folders are created."""
        pidfile = Pidfile(str(self.path))
        pidfile.acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")
        pidfile.release()
        self.assertFalse(self.path.exists())

    def test_a_live_supervisor_in_the_file_is_refused_by_pid_and_path(self) -> None:
        self.path.parent.mkdir(parents=True)
        other = os.getppid()
        self.path.write_text(f"{other}\n")
        with self.assertRaisesMessage(
            ConfigurationError,
            f"A supervisor is already running with pid {other} ({self.path}).",
        ):
            Pidfile(str(self.path)).acquire()
        self.assertEqual(self.path.read_text(), f"{other}\n")

    def test_the_pid_of_a_dead_process_is_replaced(self) -> None:
        self.path.parent.mkdir(parents=True)
        self.path.write_text(f"{dead_pid()}\n")
        Pidfile(str(self.path)).acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_a_file_that_holds_no_pid_is_replaced(self) -> None:
        self.path.parent.mkdir(parents=True)
        self.path.write_text("not a pid")
        Pidfile(str(self.path)).acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_acquiring_twice_in_one_process_is_allowed(self) -> None:
        """Our own pid in the file is not another supervisor."""
        pidfile = Pidfile(str(self.path))
        pidfile.acquire()
        pidfile.acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_release_leaves_a_file_another_supervisor_wrote(self) -> None:
        pidfile = Pidfile(str(self.path))
        pidfile.acquire()
        self.path.write_text(f"{os.getppid()}\n")
        pidfile.release()
        self.assertEqual(self.path.read_text(), f"{os.getppid()}\n")

    def test_release_without_a_file_does_nothing(self) -> None:
        Pidfile(str(self.path)).release()
        self.assertFalse(self.path.exists())
