"""`robust_queue cancel RESULT_ID...`: each id reported, exit 1 if any fails."""

from __future__ import annotations

from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TransactionTestCase

from robust_queue.models import ClaimedExecution, FailedExecution, Job, ReadyExecution
from testproject import tasks
from tests.helpers import claim, work_off


def run(*args: str) -> tuple[str, str, int]:
    out, err = StringIO(), StringIO()
    try:
        call_command("robust_queue_cancel", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return out.getvalue(), err.getvalue(), int(exc.code or 0)
    return out.getvalue(), err.getvalue(), 0


class CancelCommandTests(TransactionTestCase):
    def test_waiting_and_running_jobs(self) -> None:
        running = tasks.add.enqueue(1, 2)
        claim()
        waiting = tasks.add.enqueue(3, 4)
        out, err, code = run("--", waiting.id, running.id)
        self.assertEqual(code, 0, err)
        self.assertEqual(
            out,
            f"{waiting.id}: cancelled\n"
            f"{running.id}: cancel requested (running: its worker stops it)\n",
        )
        self.assertEqual(err, "")
        self.assertFalse(ReadyExecution.objects.exists())
        self.assertTrue(FailedExecution.objects.filter(job__result_id=waiting.id).exists())
        claimed = ClaimedExecution.objects.get(job__result_id=running.id)
        self.assertIsNotNone(claimed.cancel_requested_at)

    def test_unknown_and_finished_ids_fail_but_the_others_are_cancelled(self) -> None:
        finished = tasks.add.enqueue(1, 2)
        work_off()
        waiting = tasks.add.enqueue(3, 4)
        out, err, code = run("--", "no-such-id", finished.id, waiting.id)
        self.assertEqual(code, 1)
        self.assertEqual(out, f"{waiting.id}: cancelled\n")
        self.assertIn("no-such-id: error: No job has the result id 'no-such-id'.", err)
        self.assertIn(f"{finished.id}: error: Job {finished.id} has already finished", err)
        self.assertTrue(FailedExecution.objects.filter(job__result_id=waiting.id).exists())

    def test_an_unknown_backend_alias_is_a_clear_error(self) -> None:
        result = tasks.add.enqueue(1, 2)
        with self.assertRaisesMessage(CommandError, "'nope' is not a Robust Queue backend alias"):
            run("--backend", "nope", "--", result.id)
        self.assertTrue(ReadyExecution.objects.exists())

    def test_an_id_that_starts_with_a_dash_follows_a_double_dash(self) -> None:
        """Result ids are url-safe base64: about 1 in 64 starts with '-'."""
        result = tasks.add.enqueue(1, 2)
        Job.objects.filter(result_id=result.id).update(result_id="-" + result.id[1:])
        out, err, code = run("--", "-" + result.id[1:])
        self.assertEqual((out, err, code), (f"-{result.id[1:]}: cancelled\n", "", 0))

    def test_at_least_one_id_is_required(self) -> None:
        with self.assertRaisesMessage(
            CommandError, "the following arguments are required: RESULT_ID"
        ):
            run()
