"""Scheduled jobs move to ready in batches when due."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase
from django.utils import timezone

from robust_queue.models import ReadyExecution, ScheduledExecution
from testproject import tasks


class DispatchTests(TestCase):
    def test_only_due_jobs_are_dispatched_in_batches(self) -> None:
        soon = timezone.now() + timedelta(hours=1)
        for i in range(5):
            tasks.add.using(run_after=soon, priority=i).enqueue(i, i)
        tasks.add.using(run_after=soon + timedelta(days=1)).enqueue(0, 0)
        ScheduledExecution.objects.filter(scheduled_at=soon).update(
            scheduled_at=timezone.now() - timedelta(seconds=1)
        )
        self.assertEqual(ScheduledExecution.objects.dispatch_next_batch(3), 3)
        self.assertEqual(ScheduledExecution.objects.dispatch_next_batch(3), 2)
        self.assertEqual(ScheduledExecution.objects.dispatch_next_batch(3), 0)
        self.assertEqual(ReadyExecution.objects.count(), 5)
        self.assertEqual(ScheduledExecution.objects.count(), 1)
        priorities = sorted(ReadyExecution.objects.values_list("priority", flat=True))
        self.assertEqual(priorities, [0, 1, 2, 3, 4])

    def test_dispatch_now_moves_future_jobs(self) -> None:
        result = tasks.add.using(run_after=timezone.now() + timedelta(days=1)).enqueue(1, 1)
        self.assertEqual(ScheduledExecution.objects.dispatch_now(), 1)
        self.assertEqual(ReadyExecution.objects.get().job.result_id, result.id)
