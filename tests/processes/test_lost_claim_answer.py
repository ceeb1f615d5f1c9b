"""A claim's answer lost as the database commits it (a restart mid-commit):
the real supervisor's worker gives the jobs it never received back to
ready and runs each once, instead of holding them claimed for its life.

The fault (``ROBUST_QUEUE_TEST_LOST_CLAIM_ANSWERS``, testproject/apps.py)
lets the worker's first claim that takes jobs commit, then raise as a
dropped connection does: stopping a real server cannot hit that instant.
"""

from __future__ import annotations

from collections import Counter

from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, Job
from testproject import tasks
from testproject.apps import LOST_CLAIM_ANSWERS
from testproject.models import LedgerEntry
from tests.helpers import wait_until

from .support import Supervisor

JOBS = 6


class LostClaimAnswerTests(TransactionTestCase):
    def test_jobs_of_a_claim_whose_answer_was_lost_run_once(self) -> None:
        keys = [f"job-{n}" for n in range(JOBS)]
        for key in keys:
            tasks.record.enqueue(key)
        supervisor = Supervisor(
            self,
            env={LOST_CLAIM_ANSWERS: "1"},
            workers=[{"queues": ["*"], "threads": 3, "polling_interval": 0.05}],
        )
        done = Job.objects.filter(finished_at__isnull=False)
        wait_until(lambda: done.count() == JOBS, timeout=30)
        output = supervisor.output()
        self.assertIn("gave 3 job(s) back to ready: a claim's answer was lost", output)
        self.assertIn("its answer is lost", output, "the fault fired")
        self.assertEqual(Counter(LedgerEntry.objects.values_list("key", flat=True)), Counter(keys))
        self.assertFalse(ClaimedExecution.objects.exists())
        self.assertFalse(Job.objects.filter(finished_at__isnull=True).exists())
