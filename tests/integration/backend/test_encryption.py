"""@encrypted tasks keep their arguments (and with result=True their return
value) encrypted in the job row: enqueue, run, get_result, rotation, and
the clear error of a process without the key."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.db import connection
from django.test import TestCase, override_settings

from robust_queue.compat import TaskResultStatus
from robust_queue.exceptions import EncryptionError
from robust_queue.models import Job, UniqueKey
from robust_queue.options.sealing import is_sealed
from testproject import encrypted_tasks, tasks
from testproject.models import LedgerEntry
from tests.helpers import work_off

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()
CARD = "4111-1111-1111-1111"


def keys(*given: str) -> Any:
    return override_settings(
        ROBUST_QUEUE={"encryption_keys": list(given), "task_modules": [encrypted_tasks.__name__]}
    )


def raw_row(result_id: str) -> str:
    """The job row as the database holds it, every column as text."""
    table = Job._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE result_id = %s", [result_id])
        return " ".join(str(value) for value in cursor.fetchone())


@keys(NEW_KEY)
class EncryptedArgumentsTests(TestCase):
    def test_the_row_holds_no_plaintext_and_get_result_decrypts(self) -> None:
        """The stored arguments are a Fernet token; the result shows the
        arguments as given, and get_result() decrypts them again."""
        result = encrypted_tasks.record_card.enqueue(CARD, amount=42)
        self.assertEqual((result.args, result.kwargs), ([CARD], {"amount": 42}))
        job = Job.objects.get(result_id=result.id)
        self.assertIs(is_sealed(job.arguments), True)
        self.assertNotIn(CARD, raw_row(result.id))
        self.assertNotIn("amount", raw_row(result.id))
        back = encrypted_tasks.record_card.get_result(result.id)
        self.assertEqual((back.args, back.kwargs), ([CARD], {"amount": 42}))

    def test_a_worker_with_the_key_runs_it_with_the_real_arguments(self) -> None:
        result = encrypted_tasks.record_card.enqueue(CARD, amount=7)
        work_off()
        self.assertEqual(list(LedgerEntry.objects.values_list("key", flat=True)), [f"{CARD}:7"])
        back = encrypted_tasks.record_card.get_result(result.id)
        self.assertEqual(back.status, TaskResultStatus.SUCCESSFUL)
        # Without result=True the return value is stored as it is.
        self.assertEqual(back.return_value, f"charged 7 to {CARD}")

    def test_result_true_encrypts_the_return_value_too(self) -> None:
        result = encrypted_tasks.lookup_secret.enqueue("alice")
        work_off()
        job = Job.objects.get(result_id=result.id)
        self.assertIs(is_sealed(job.return_value), True)
        self.assertNotIn("value of alice", raw_row(result.id))
        back = encrypted_tasks.lookup_secret.get_result(result.id)
        self.assertEqual(back.return_value, {"secret": "value of alice"})
        self.assertEqual(back.args, ["alice"])

    def test_the_keyword_form_is_the_decorator(self) -> None:
        result = encrypted_tasks.declared_by_keyword.enqueue("quiet")
        work_off()
        job = Job.objects.get(result_id=result.id)
        self.assertIs(is_sealed(job.arguments), True)
        self.assertIs(is_sealed(job.return_value), True)
        self.assertEqual(
            encrypted_tasks.declared_by_keyword.get_result(result.id).return_value, "QUIET"
        )

    def test_unique_keys_come_from_the_plaintext_and_show_none_of_it(self) -> None:
        """Two calls with the same arguments are one job (their tokens
        differ); the key's label holds no argument."""
        first = encrypted_tasks.lookup_secret.enqueue("bob")
        second = encrypted_tasks.lookup_secret.enqueue("bob")
        self.assertEqual(second.id, first.id)
        self.assertIs(second.is_duplicate, True)
        self.assertNotEqual(encrypted_tasks.lookup_secret.enqueue("carol").id, first.id)
        labels = list(UniqueKey.objects.values_list("key", flat=True))
        self.assertEqual(len(labels), 2)
        for label in labels:
            self.assertNotIn("bob", label)
            self.assertIn("(encrypted arguments)", label)

    def test_a_plain_task_is_stored_as_before(self) -> None:
        result = tasks.add.enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        self.assertEqual(job.arguments, {"args": [1, 2], "kwargs": {}})


class KeyRotationTests(TestCase):
    def test_old_keys_decrypt_and_the_first_key_encrypts(self) -> None:
        with keys(OLD_KEY):
            old = encrypted_tasks.record_card.enqueue(CARD, amount=1)
        with keys(NEW_KEY, OLD_KEY):
            # Rotated: the old row still opens, a new one uses the new key.
            self.assertEqual(encrypted_tasks.record_card.get_result(old.id).args, [CARD])
            new = encrypted_tasks.record_card.enqueue(CARD, amount=2)
        with keys(NEW_KEY):
            self.assertEqual(encrypted_tasks.record_card.get_result(new.id).kwargs, {"amount": 2})
            with self.assertRaisesMessage(EncryptionError, "the key that encrypted it"):
                encrypted_tasks.record_card.get_result(old.id)
        with keys(OLD_KEY), self.assertRaises(EncryptionError):
            encrypted_tasks.record_card.get_result(new.id)

    def test_a_worker_with_rotated_keys_runs_old_and_new_jobs(self) -> None:
        with keys(OLD_KEY):
            encrypted_tasks.record_card.enqueue("old", amount=1)
        with keys(NEW_KEY, OLD_KEY):
            encrypted_tasks.record_card.enqueue("new", amount=2)
            work_off()
        self.assertEqual(
            sorted(LedgerEntry.objects.values_list("key", flat=True)), ["new:2", "old:1"]
        )


class MissingKeyTests(TestCase):
    @keys()
    def test_enqueue_without_keys_is_a_clear_error_and_writes_nothing(self) -> None:
        with self.assertRaisesMessage(EncryptionError, 'ROBUST_QUEUE["encryption_keys"] is empty'):
            encrypted_tasks.record_card.enqueue(CARD, amount=1)
        self.assertFalse(Job.objects.exists())

    @keys("not-a-key")
    def test_a_bad_key_is_named_by_its_place_never_quoted(self) -> None:
        with self.assertRaises(EncryptionError) as raised:
            encrypted_tasks.record_card.enqueue(CARD, amount=1)
        self.assertIn(
            'ROBUST_QUEUE["encryption_keys"][0] is not a Fernet key', str(raised.exception)
        )
        self.assertNotIn("not-a-key", str(raised.exception))
        self.assertFalse(Job.objects.exists())

    def test_a_worker_without_the_key_fails_the_job_and_never_runs_it(self) -> None:
        with keys(NEW_KEY):
            result = encrypted_tasks.record_card.enqueue(CARD, amount=3)
        with keys():
            work_off()
        self.assertFalse(LedgerEntry.objects.exists())
        job = Job.objects.get(result_id=result.id)
        self.assertIs(hasattr(job, "failed_execution"), True)
        [error] = job.errors
        self.assertEqual(error["exception_class_path"], "robust_queue.exceptions.EncryptionError")
        self.assertIn(f"Cannot decrypt job {result.id}'s arguments", error["traceback"])
        self.assertIn('ROBUST_QUEUE["encryption_keys"] is empty', error["traceback"])
        self.assertNotIn(CARD, raw_row(result.id))

    def test_a_worker_with_a_wrong_key_fails_the_job(self) -> None:
        with keys(NEW_KEY):
            result = encrypted_tasks.record_card.enqueue(CARD, amount=3)
        with keys(OLD_KEY):
            work_off()
        self.assertFalse(LedgerEntry.objects.exists())
        [error] = Job.objects.get(result_id=result.id).errors
        self.assertEqual(error["exception_class_path"], "robust_queue.exceptions.EncryptionError")
        self.assertIn("with any of the 1 key(s)", error["traceback"])

    def test_a_row_sealed_for_a_task_no_longer_encrypted_still_opens_or_fails(self) -> None:
        """The row decides, not the declaration: a sealed row of a plain
        task is decrypted, never run with empty arguments."""
        with keys(NEW_KEY):
            sealed = encrypted_tasks.record_card.enqueue(CARD, amount=5)
        job = Job.objects.get(result_id=sealed.id)
        plain = tasks.echo.enqueue()
        Job.objects.filter(result_id=plain.id).update(arguments=job.arguments)
        work_off()
        [error] = Job.objects.get(result_id=plain.id).errors
        self.assertEqual(error["exception_class_path"], "robust_queue.exceptions.EncryptionError")
