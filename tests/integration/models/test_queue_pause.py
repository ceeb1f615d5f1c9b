"""A queue pause is read again in the claim's own snapshot: a worker whose
list of pauses predates ``Queue.pause()`` takes none of that queue's jobs."""

from __future__ import annotations

from django.test import TestCase

from robust_queue.models import Queue, ReadyExecution
from testproject import tasks


def _claim(queue_name: str | None = None, exclude: tuple[str, ...] = ()) -> list[str]:
    rows = ReadyExecution.objects.claim(
        100,
        process_id=None,
        worker_id="w",
        queue_name=queue_name,
        exclude_queues=exclude,
        paused_tasks=(),
    )
    return sorted(row.job.queue_name for row in rows)


class QueuePauseClaimTests(TestCase):
    def setUp(self) -> None:
        tasks.add.enqueue(1, 2)
        tasks.add.using(queue_name="other").enqueue(3, 4)

    def test_a_claim_of_every_queue_that_predates_the_pause_takes_nothing(self) -> None:
        """It stops until the worker reads its pauses again."""
        Queue("default").pause()
        self.assertEqual(_claim(), [])
        self.assertEqual(ReadyExecution.objects.count(), 2)

    def test_a_claim_of_every_queue_that_knows_the_pause_takes_the_rest(self) -> None:
        Queue("default").pause()
        self.assertEqual(_claim(exclude=("default",)), ["other"])

    def test_a_claim_of_the_paused_queue_by_name_takes_nothing(self) -> None:
        Queue("default").pause()
        self.assertEqual(_claim("default"), [])

    def test_a_pause_of_another_queue_does_not_stop_a_named_claim(self) -> None:
        Queue("default").pause()
        self.assertEqual(_claim("other"), ["other"])

    def test_after_resume_the_queue_is_claimed(self) -> None:
        Queue("default").pause()
        Queue("default").resume()
        self.assertEqual(_claim(), ["default", "other"])
