"""A real supervisor's worker runs @encrypted jobs with the keys in its
settings (rotated ones too) and fails them with a clear error without."""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.test import TransactionTestCase, override_settings

from robust_queue.compat import TaskResultStatus
from robust_queue.models import Job
from testproject import encrypted_tasks
from testproject.models import LedgerEntry
from tests.helpers import wait_until
from tests.processes.support import Supervisor

MODULES = [encrypted_tasks.__name__]
OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()


def ended(result_id: str) -> bool:
    job = Job.objects.filter(result_id=result_id).with_executions().first()
    return job is not None and (job.finished_at is not None or hasattr(job, "failed_execution"))


class EncryptedJobsProcessTests(TransactionTestCase):
    def test_a_worker_with_rotated_keys_runs_old_and_new_jobs(self) -> None:
        with override_settings(ROBUST_QUEUE={"encryption_keys": [OLD_KEY]}):
            old = encrypted_tasks.record_card.enqueue("card-old", amount=1)
        with override_settings(ROBUST_QUEUE={"encryption_keys": [NEW_KEY, OLD_KEY]}):
            new = encrypted_tasks.lookup_secret.enqueue("name-new")
            Supervisor(self, task_modules=MODULES, encryption_keys=[NEW_KEY, OLD_KEY])
            wait_until(lambda: ended(old.id) and ended(new.id), timeout=60)
            self.assertEqual(
                sorted(LedgerEntry.objects.values_list("key", flat=True)),
                ["card-old:1", "looked up name-new"],
            )
            back = encrypted_tasks.lookup_secret.get_result(new.id)
            self.assertEqual(back.status, TaskResultStatus.SUCCESSFUL)
            self.assertEqual(back.return_value, {"secret": "value of name-new"})
        row = Job.objects.values("arguments", "return_value").get(result_id=new.id)
        self.assertNotIn("name-new", str(row))

    def test_a_worker_with_a_wrong_key_fails_the_job_and_never_runs_it(self) -> None:
        with override_settings(ROBUST_QUEUE={"encryption_keys": [NEW_KEY]}):
            result = encrypted_tasks.record_card.enqueue("card-x", amount=2)
        Supervisor(self, task_modules=MODULES, encryption_keys=[OLD_KEY])
        wait_until(lambda: ended(result.id), timeout=60)
        self.assertFalse(LedgerEntry.objects.exists())
        [error] = Job.objects.get(result_id=result.id).errors
        self.assertEqual(error["exception_class_path"], "robust_queue.exceptions.EncryptionError")
        self.assertIn("with any of the 1 key(s) in", error["traceback"])

    def test_a_supervisor_without_keys_for_its_encrypted_tasks_does_not_start(self) -> None:
        supervisor = Supervisor(self, task_modules=MODULES)
        self.assertNotEqual(supervisor.wait(timeout=30), 0)
        self.assertIn("robust_queue.E025", supervisor.output())
        self.assertIn(
            'are @encrypted but ROBUST_QUEUE["encryption_keys"] is empty', supervisor.output()
        )
