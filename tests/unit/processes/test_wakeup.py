"""The interruptible sleep every loop uses (no database)."""

from __future__ import annotations

import os
import signal
import threading
import time

from django.test import SimpleTestCase

from robust_queue.processes.wakeup import Wakeup


class WakeupTests(SimpleTestCase):
    def setUp(self) -> None:
        self.wakeup = Wakeup()
        self.addCleanup(self.wakeup.close)

    def test_wait_sleeps_the_whole_timeout_when_nobody_wakes_it(self) -> None:
        start = time.monotonic()
        self.assertIs(self.wakeup.wait(0.2), False)
        self.assertGreaterEqual(time.monotonic() - start, 0.19)

    def test_a_wake_before_the_wait_returns_at_once(self) -> None:
        """A wake is never lost: it counts even if it comes first."""
        self.wakeup.wake()
        start = time.monotonic()
        self.assertIs(self.wakeup.wait(30), True)
        self.assertLess(time.monotonic() - start, 5)

    def test_a_wake_from_another_thread_ends_the_wait(self) -> None:
        timer = threading.Timer(0.1, self.wakeup.wake)
        timer.start()
        self.addCleanup(timer.cancel)
        start = time.monotonic()
        self.assertIs(self.wakeup.wait(30), True)
        self.assertLess(time.monotonic() - start, 5)

    def test_a_wake_from_a_signal_handler_ends_the_wait(self) -> None:
        previous = signal.signal(signal.SIGUSR1, lambda *_: self.wakeup.wake())
        self.addCleanup(signal.signal, signal.SIGUSR1, previous)
        timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGUSR1))
        timer.start()
        self.addCleanup(timer.cancel)
        start = time.monotonic()
        self.assertIs(self.wakeup.wait(30), True)
        self.assertLess(time.monotonic() - start, 5)

    def test_many_wakes_end_one_wait_only(self) -> None:
        """Pending wakes are drained: the next wait sleeps again."""
        for _ in range(10):
            self.wakeup.wake()
        self.assertIs(self.wakeup.wait(0), True)
        self.assertIs(self.wakeup.wait(0.05), False)

    def test_waking_never_blocks_even_when_the_pipe_is_full(self) -> None:
        """Safe in a signal handler: nothing reads the pipe, wake returns."""
        start = time.monotonic()
        for _ in range(100_000):
            self.wakeup.wake()
        self.assertLess(time.monotonic() - start, 10)
        self.assertIs(self.wakeup.wait(0), True)
        self.assertIs(self.wakeup.wait(0), False)

    def test_a_negative_timeout_is_a_poll(self) -> None:
        self.assertIs(self.wakeup.wait(-1), False)

    def test_close_releases_both_descriptors_and_a_late_wake_is_harmless(self) -> None:
        wakeup = Wakeup()
        before = len(os.listdir("/proc/self/fd"))
        wakeup.close()
        self.assertEqual(len(os.listdir("/proc/self/fd")), before - 2)
        wakeup.wake()
        wakeup.close()
