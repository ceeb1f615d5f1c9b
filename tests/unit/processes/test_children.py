"""How the supervisor paces replacements and describes exits (no database)."""

from __future__ import annotations

import os
import time

from django.test import SimpleTestCase

from robust_queue.processes.base import Runnable
from robust_queue.processes.children import (
    MAX_BACKOFF,
    STABLE_AFTER,
    Child,
    Role,
    ThreadChild,
    describe_exit,
)

ROLE = Role("worker", Runnable)


def child(failures: int, lived: float = 0.0) -> Child:
    started = Child(ROLE, failures)
    started.started_at = time.monotonic() - lived
    return started


class ReplacementDelayTests(SimpleTestCase):
    def test_a_child_that_dies_at_once_waits_longer_each_time(self) -> None:
        """1 s, 2 s, 4 s, ... while it keeps failing."""
        self.assertEqual(child(0).replacement_delay(), (1.0, 1))
        self.assertEqual(child(1).replacement_delay(), (2.0, 2))
        self.assertEqual(child(3).replacement_delay(), (8.0, 4))

    def test_the_wait_is_capped(self) -> None:
        self.assertEqual(child(10).replacement_delay(), (MAX_BACKOFF, 11))
        self.assertEqual(child(1000).replacement_delay(), (MAX_BACKOFF, 1001))

    def test_a_child_that_lived_long_is_replaced_at_once_and_forgiven(self) -> None:
        """Its failure count starts over."""
        self.assertEqual(child(7, lived=STABLE_AFTER).replacement_delay(), (0.0, 0))

    def test_a_child_just_short_of_stable_still_backs_off(self) -> None:
        self.assertEqual(child(2, lived=STABLE_AFTER - 5).replacement_delay(), (4.0, 3))


class DescribeExitTests(SimpleTestCase):
    def exit_status(self, script: str) -> int:
        """The raw wait status of a shell that runs ``script``."""
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", script], os.environ)
        return os.waitpid(pid, 0)[1]

    def test_an_exit_code(self) -> None:
        self.assertEqual(describe_exit(self.exit_status("exit 3")), "exited with code 3")

    def test_a_signal(self) -> None:
        self.assertEqual(
            describe_exit(self.exit_status("kill -9 $$")), "was killed by signal SIGKILL"
        )


class _Ended(Runnable):
    """A role whose thread has ended; ``stuck`` are threads it left."""

    def __init__(self, stuck: list[str]) -> None:
        super().__init__(using="default", heartbeat_interval=60)
        self.stuck = stuck

    def start(self) -> None:
        pass

    def stuck_threads(self) -> list[str]:
        return self.stuck


class ThreadChildExitTests(SimpleTestCase):
    def ended(self, stuck: list[str]) -> tuple[ThreadChild, _Ended]:
        runnable = _Ended(stuck)
        child = ThreadChild(ROLE, 0, runnable)
        child.thread.start()
        child.thread.join()
        return child, runnable

    def test_a_stuck_thread_is_logged_and_keeps_the_wakeup_pipe(self) -> None:
        """The stuck thread pokes the role's pipe when its call returns: the
        pipe stays open, so the byte cannot land in a reused descriptor."""
        child, runnable = self.ended(["rq-pool-0 (job abc)"])
        with self.assertLogs("robust_queue.processes.children", "ERROR") as logs:
            self.assertEqual(child.exit_reason(), "stopped")
        self.assertIn("leaves rq-pool-0 (job abc) behind", logs.output[0])
        self.assertIn("cannot be stopped in thread mode", logs.output[0])
        runnable.wakeup.wake()
        self.assertIs(runnable.wakeup.wait(0), True)
        runnable.wakeup.close()
