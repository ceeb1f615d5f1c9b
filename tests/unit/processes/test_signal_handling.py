"""Signal handlers only queue the signal and wake the loop (no database)."""

from __future__ import annotations

import os
import signal
import threading
import time

from django.test import SimpleTestCase

from robust_queue.processes.signal_handling import HANDLED, SignalQueue, restore_defaults
from robust_queue.processes.wakeup import Wakeup


class SignalQueueTests(SimpleTestCase):
    def setUp(self) -> None:
        saved = {signum: signal.getsignal(signum) for signum in HANDLED}
        for signum, handler in saved.items():
            self.addCleanup(signal.signal, signum, handler)
        self.wakeup = Wakeup()
        self.addCleanup(self.wakeup.close)
        self.signals = SignalQueue(self.wakeup.wake)
        self.signals.install()

    def test_signals_are_queued_in_order_and_popped_once(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGQUIT)
        os.kill(os.getpid(), signal.SIGINT)
        self.assertEqual(self.signals.pop_all(), [signal.SIGTERM, signal.SIGQUIT, signal.SIGINT])
        self.assertEqual(self.signals.pop_all(), [])

    def test_a_signal_wakes_the_sleeping_loop(self) -> None:
        timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        self.addCleanup(timer.cancel)
        start = time.monotonic()
        self.assertIs(self.wakeup.wait(30), True)
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(self.signals.pop_all(), [signal.SIGTERM])

    def test_restore_defaults_removes_the_handlers(self) -> None:
        """A forked child starts with the default handlers, not the queue."""
        restore_defaults()
        for signum in HANDLED:
            self.assertIs(signal.getsignal(signum), signal.SIG_DFL)
