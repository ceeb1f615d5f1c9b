"""The supervisor's pidfile (no database)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from functools import partial
from pathlib import Path

from django.test import SimpleTestCase

from robust_queue.exceptions import PidfileLocked
from robust_queue.processes.pidfile import Pidfile
from tests.helpers import run_in_threads

ROOT = Path(__file__).resolve().parents[3]


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

    def test_a_held_lock_is_refused_naming_the_holder_and_the_path(self) -> None:
        """Another open of the file conflicts with the lock, as another
        process's would; the holder's file is left as it was."""
        holder = Pidfile(str(self.path))
        holder.acquire()
        self.addCleanup(holder.release)
        with self.assertRaisesMessage(
            PidfileLocked,
            f"A supervisor is already running with pid {os.getpid()}: "
            f"it holds the lock on {self.path}.",
        ):
            Pidfile(str(self.path)).acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_starts_that_race_have_exactly_one_winner(self) -> None:
        """A check-then-write lets every start that reads before the first
        write win; the lock lets one."""
        contenders = [Pidfile(str(self.path)) for _ in range(8)]
        barrier = threading.Barrier(len(contenders))

        def start(pidfile: Pidfile) -> bool:
            barrier.wait()
            try:
                pidfile.acquire()
            except PidfileLocked:
                return False
            return True

        results = run_in_threads([partial(start, p) for p in contenders])
        for pidfile in contenders:
            self.addCleanup(pidfile.release)
        self.assertEqual(results.count(True), 1, results)

    def test_a_live_pid_without_the_lock_is_replaced(self) -> None:
        """The lock decides, not the pid: a process that holds no lock is
        not a supervisor of this file (a reused pid, a copied file)."""
        self.path.parent.mkdir(parents=True)
        self.path.write_text(f"{os.getppid()}\n")
        Pidfile(str(self.path)).acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_the_lock_is_free_again_after_release(self) -> None:
        first = Pidfile(str(self.path))
        first.acquire()
        first.release()
        second = Pidfile(str(self.path))
        second.acquire()
        self.addCleanup(second.release)
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_a_killed_holder_leaves_no_lock(self) -> None:
        """SIGKILL skips release: the kernel drops the lock."""
        code = (
            "import sys, time; from robust_queue.processes.pidfile import Pidfile; "
            f"Pidfile({str(self.path)!r}).acquire(); print('held', flush=True); time.sleep(60)"
        )
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        self.assertEqual(child.stdout.readline().strip(), "held")  # type: ignore[union-attr]
        with self.assertRaisesMessage(PidfileLocked, f"pid {child.pid}"):
            Pidfile(str(self.path)).acquire()
        child.kill()
        child.wait()
        Pidfile(str(self.path)).acquire()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_a_forked_child_does_not_keep_the_lock(self) -> None:
        """A worker that outlives its supervisor must not refuse the next."""
        holder = Pidfile(str(self.path))
        holder.acquire()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child waits until the parent has released
            os.close(write_fd)
            os.read(read_fd, 1)
            os._exit(0)
        os.close(read_fd)
        try:
            holder.release()
            Pidfile(str(self.path)).acquire()
        finally:
            os.write(write_fd, b"x")
            os.close(write_fd)
            os.waitpid(pid, 0)

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

    def test_a_refused_start_leaves_the_holders_file_at_release(self) -> None:
        holder = Pidfile(str(self.path))
        holder.acquire()
        self.addCleanup(holder.release)
        refused = Pidfile(str(self.path))
        with self.assertRaises(PidfileLocked):
            refused.acquire()
        refused.release()
        self.assertEqual(self.path.read_text(), f"{os.getpid()}\n")

    def test_release_without_a_file_does_nothing(self) -> None:
        Pidfile(str(self.path)).release()
        self.assertFalse(self.path.exists())
