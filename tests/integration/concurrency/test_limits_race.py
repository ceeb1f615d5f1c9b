"""The concurrency limit holds with real threads and connections racing.

Three "workers" of three threads each claim and run jobs one at a time
while enqueuers keep adding jobs of the same key. Every run records its
start and end; at no instant may more runs overlap than the limit. Each
run waits (up to 2 s) for another to overlap it, so the limit is reached
however loaded the machine: with plain short runs a busy host sometimes
never ran two at once, and "reached" failed though nothing was wrong.
"""

from __future__ import annotations

import time
from datetime import datetime

from django.test import TransactionTestCase

from robust_queue.models import BlockedExecution, Job, Semaphore
from robust_queue.running.performing import perform
from testproject import control_tasks as ct
from testproject.models import LedgerEntry
from tests.helpers import claim, run_in_threads

LIMIT = 2
JOBS = 30
WORKERS, THREADS = 3, 3


def max_overlap(spans: list[tuple[datetime, datetime]]) -> int:
    # Ends sort before starts at the same instant: touching is no overlap.
    events = sorted(
        [(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans],
        key=lambda event: (event[0], event[1]),
    )
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def spans() -> list[tuple[datetime, datetime]]:
    times: dict[str, dict[str, datetime]] = {}
    for entry in LedgerEntry.objects.all():
        kind, _, label = entry.key.partition(":")
        times.setdefault(label, {})[kind] = entry.created_at
    return [(t["start"], t["end"]) for t in times.values()]


class LimitRaceTests(TransactionTestCase):
    def test_the_limit_is_never_exceeded(self) -> None:
        deadline = time.monotonic() + 90

        def enqueue(start: int) -> None:
            for i in range(start, JOBS, 3):
                ct.limited_meeting.enqueue("acme", f"j{i}", wait=2.0)

        def work(worker: int, thread: int) -> None:
            name = f"worker-{worker}-{thread}"
            while time.monotonic() < deadline:
                if Job.objects.finished().count() >= JOBS:
                    return
                claimed = claim(1, worker_id=name)
                if not claimed:
                    time.sleep(0.01)
                    continue
                perform(claimed[0])

        targets = [lambda s=s: enqueue(s) for s in range(3)]
        targets += [lambda w=w, t=t: work(w, t) for w in range(WORKERS) for t in range(THREADS)]
        run_in_threads(targets)
        self.assertEqual(Job.objects.finished().count(), JOBS)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertEqual(Semaphore.objects.get().value, LIMIT)
        measured = spans()
        self.assertEqual(len(measured), JOBS)
        self.assertEqual(max_overlap(measured), LIMIT)
