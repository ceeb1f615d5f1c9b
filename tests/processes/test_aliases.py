"""A renamed task runs the jobs queued under its old path in a real
supervisor's worker, with its retry policy, and they read back."""

from __future__ import annotations

from django.test import TransactionTestCase

from robust_queue.compat import TaskResultStatus
from robust_queue.models import Job
from testproject import renamed_tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until
from tests.processes.support import Supervisor

MODULES = ["testproject.renamed_tasks"]


def finished(result_id: str) -> bool:
    return Job.objects.filter(result_id=result_id, finished_at__isnull=False).exists()


class AliasedJobsProcessTests(TransactionTestCase):
    def test_jobs_naming_old_paths_run_the_renamed_tasks(self) -> None:
        old = renamed_tasks.record_entry.enqueue("old-path")
        older = renamed_tasks.record_entry.enqueue("older-path")
        retried = renamed_tasks.flaky.enqueue("retried")
        for result, path in (
            (old, renamed_tasks.OLD_RECORD),
            (older, renamed_tasks.OLD_RECORD_TOO),
            (retried, renamed_tasks.OLD_FLAKY),
        ):
            Job.objects.filter(result_id=result.id).update(task_path=path)
        Supervisor(self, task_modules=MODULES)
        wait_until(lambda: all(finished(r.id) for r in (old, older, retried)), timeout=60)
        self.assertEqual(
            sorted(LedgerEntry.objects.values_list("key", flat=True)),
            ["old-path", "older-path", "retried"],
        )
        for result, value in ((old, "recorded old-path"), (older, "recorded older-path")):
            back = renamed_tasks.record_entry.get_result(result.id)
            self.assertEqual((back.status, back.return_value), (TaskResultStatus.SUCCESSFUL, value))
        back = renamed_tasks.flaky.get_result(retried.id)
        self.assertEqual(back.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(len(back.errors), 1)  # the first attempt, retried by the task's policy
