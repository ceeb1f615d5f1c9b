"""A worker that stops with outcomes it could not write leaves on its row
what each body did; whoever fails those claims says so."""

from __future__ import annotations

from django.test import TestCase

from robust_queue.models import ClaimedExecution, Process, ProcessKind
from robust_queue.models.process import BODY_FINISHED, OUTCOME_NOT_RECORDED

from .test_process_lifecycle import claimed_by, errors_of, register, silence


class UnrecordedOutcomeTests(TestCase):
    def setUp(self) -> None:
        self.supervisor = register("s", kind=ProcessKind.SUPERVISOR, pid=1)
        self.worker = register("w", pid=200, supervisor=self.supervisor)
        self.noted, self.other = claimed_by(self.worker, count=2)
        claim = ClaimedExecution.objects.get(job__result_id=self.noted)
        self.worker.note_unrecorded({claim.pk: "it returned 3"})

    def test_an_exit_says_what_the_body_did(self) -> None:
        """The noted claim names the body's outcome; the other says only
        that the job may have run."""
        rows = Process.objects.filter(pk=self.worker.pk)
        self.assertEqual(rows.fail_all_claims("exited with code 0"), 2)
        [(path, trace)] = errors_of(self.noted)
        self.assertEqual(path, "robust_queue.exceptions.ProcessExitError")
        self.assertIn(
            "w (pid 200) exited with code 0. The body finished (it returned 3); "
            "its outcome could not be recorded.",
            trace,
        )
        self.assertNotIn(OUTCOME_NOT_RECORDED, trace)
        [(_, other)] = errors_of(self.other)
        self.assertIn(f"w (pid 200) exited with code 0. {OUTCOME_NOT_RECORDED}", other)
        self.assertFalse(Process.objects.filter(pk=self.worker.pk).exists())

    def test_a_prune_says_what_the_body_did(self) -> None:
        silence(self.worker)
        self.assertEqual(Process.objects.prune(60), [self.worker])
        [(path, trace)] = errors_of(self.noted)
        self.assertEqual(path, "robust_queue.exceptions.ProcessPrunedError")
        self.assertIn(
            f"stopped heartbeating and was pruned. {BODY_FINISHED.format('it returned 3')}",
            trace,
        )
        [(_, other)] = errors_of(self.other)
        self.assertIn(f"was pruned. {OUTCOME_NOT_RECORDED}", other)

    def test_the_note_keeps_the_rest_of_the_row_s_metadata(self) -> None:
        Process.objects.filter(pk=self.worker.pk).update(metadata={"threads": 3})
        worker = Process.objects.get(pk=self.worker.pk)
        worker.note_unrecorded({7: "it snoozed for 0:00:05"})
        self.assertEqual(
            Process.objects.get(pk=self.worker.pk).metadata,
            {"threads": 3, "unrecorded_outcomes": {"7": "it snoozed for 0:00:05"}},
        )
