"""A fair group's cap holds with real threads and connections racing.

Enqueuers add jobs of two capped groups (cap 2) while three "workers" of
three threads each claim and run them one at a time. Every run records
its span, and each waits (up to 2 s) for another to overlap it, so the
cap is reached however loaded the machine; at no instant do more runs of
one group overlap than its cap.
"""

from __future__ import annotations

import time

from django.test import TransactionTestCase

from robust_queue.models import BlockedExecution, Job, Semaphore
from robust_queue.running.performing import perform
from testproject import fair_tasks as ft
from testproject.models import LedgerEntry
from tests.helpers import claim, run_in_threads
from tests.integration.concurrency.test_limits_race import max_overlap

CAP = 2
JOBS_PER_GROUP = 15
GROUPS = ("x", "y")
WORKERS, THREADS = 3, 3


def spans_of(group: str) -> list[tuple[object, object]]:
    times: dict[str, dict[str, object]] = {}
    for entry in LedgerEntry.objects.filter(key__contains=f":{group}-"):
        kind, _, label = entry.key.partition(":")
        times.setdefault(label, {})[kind] = entry.created_at
    return [(t["start"], t["end"]) for t in times.values()]


class FairGroupCapRaceTests(TransactionTestCase):
    def test_a_groups_cap_is_never_exceeded(self) -> None:
        total = JOBS_PER_GROUP * len(GROUPS)
        deadline = time.monotonic() + 90

        def enqueue(group: str) -> None:
            for i in range(JOBS_PER_GROUP):
                ft.capped_tenant_job.enqueue(group, f"{group}-{i}", wait=2.0)

        def work(name: str) -> None:
            while time.monotonic() < deadline:
                if Job.objects.finished().count() >= total:
                    return
                claimed = claim(1, worker_id=name, queue_name="tenants")
                if not claimed:
                    time.sleep(0.01)
                    continue
                perform(claimed[0])

        targets = [lambda g=g: enqueue(g) for g in GROUPS]
        targets += [
            lambda n=f"worker-{w}-{t}": work(n) for w in range(WORKERS) for t in range(THREADS)
        ]
        run_in_threads(targets)
        self.assertEqual(Job.objects.finished().count(), total)
        self.assertFalse(BlockedExecution.objects.exists())
        self.assertEqual(
            sorted(Semaphore.objects.values_list("key", "value")),
            [(f"fair:tenants/{group}", CAP) for group in GROUPS],
        )
        for group in GROUPS:
            with self.subTest(group=group):
                measured = spans_of(group)
                self.assertEqual(len(measured), JOBS_PER_GROUP)
                self.assertEqual(max_overlap(measured), CAP)  # type: ignore[arg-type]
