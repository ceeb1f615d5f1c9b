"""An ``async def`` body under watch is stopped by cancelling it in its
event loop (processes/async_bodies.py), never by an asynchronous
exception in the worker thread."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any, cast

from django.test import SimpleTestCase

from robust_queue.processes.async_bodies import is_async, run_cancellable
from robust_queue.processes.watchdog import Watch
from robust_queue.running.performing import Body


def _watch() -> Watch:
    claimed = SimpleNamespace(pk=1, job_id=1, job=SimpleNamespace(result_id="r"))
    return Watch(cast(Any, claimed), None, is_async=True)


def _body(func: Any, *args: Any) -> Body:
    return Body(cast(Any, SimpleNamespace(func=func)), list(args), {})


async def _sleeps(awaiting: threading.Event) -> str:
    awaiting.set()
    await asyncio.sleep(30)
    return "slept"


async def _returns(value: int) -> int:
    return value


class AsyncBodyTests(SimpleTestCase):
    def test_an_async_task_is_told_apart(self) -> None:
        self.assertIs(is_async(_body(_returns)), True)
        self.assertIs(is_async(_body(lambda: None)), False)

    def test_it_runs_to_its_value(self) -> None:
        self.assertEqual(run_cancellable(_watch(), _body(_returns, 7)), 7)

    def test_a_stop_while_it_awaits_cancels_it_where_it_awaits(self) -> None:
        watch, awaiting = _watch(), threading.Event()
        stopper = threading.Thread(target=lambda: awaiting.wait(10) and watch.interrupt("timeout"))
        stopper.start()
        with self.assertRaises(asyncio.CancelledError):
            run_cancellable(watch, _body(_sleeps, awaiting))
        stopper.join()
        self.assertIsNotNone(watch.sent_at)

    def test_a_stop_before_its_loop_starts_cancels_it_once_it_does(self) -> None:
        watch, awaiting = _watch(), threading.Event()
        watch.interrupt("cancel")
        with self.assertRaises(asyncio.CancelledError):
            run_cancellable(watch, _body(_sleeps, awaiting))

    def test_a_stop_after_its_loop_closed_reaches_nothing(self) -> None:
        watch = _watch()
        run_cancellable(watch, _body(_returns, 1))
        watch.interrupt("timeout")  # no loop to send it to: no error
        watch.leave()
        self.assertIsNotNone(watch.sent_at)
