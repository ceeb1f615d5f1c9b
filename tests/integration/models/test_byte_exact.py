"""Queue names, pauses and keys compare byte-exact on every database.

MySQL's and MariaDB's default collations ignore case, accents and trailing
spaces; migration 0004 gives the compared columns a binary collation. The
rows here are written past enqueue's validation, as rows from before it
(or another writer) would be.
"""

from __future__ import annotations

import importlib
from datetime import timedelta

from django.db import connection
from django.test import TestCase
from django.utils import timezone

from robust_queue.models import Job, Pause, Queue, ReadyExecution, Semaphore
from robust_queue.models.retention import Retention
from robust_queue.processes.selector import QueueSelector
from testproject import tasks
from tests.helpers import claim, work_off

# Look-alikes of "default" under a case/accent-insensitive, padding collation.
LOOK_ALIKES = ("DEFAULT", "default ", "défault", "Default")

_migration = importlib.import_module("robust_queue.migrations.0004_binary_collation")


def _columns_of(migration: str) -> tuple[tuple[str, str], ...]:
    return tuple(importlib.import_module(f"robust_queue.migrations.{migration}").COLUMNS)


# Every column compared with = / IN / a unique index, and the migration
# that made it binary on MySQL/MariaDB.
COMPARED = (
    *_migration.COLUMNS,
    *_columns_of("0005_unique_jobs"),  # unique key hash, result id
    *_columns_of("0006_statistics"),  # upsert key: queue, task
    ("robust_queue_task_pause", "task_path"),  # 0007
    *_columns_of("0009_queue_caps"),
    *_columns_of("0011_job_task_path_binary"),  # prune/retry --task
    ("robust_queue_job_tag", "tag"),  # 0015
    *_columns_of("0016_rate_limits"),  # rate keys
    *_columns_of("0019_batches"),  # public batch id
    *_columns_of("0023_process_commands"),  # a process's command, queue actions' filters
    ("robust_queue_failed_execution", "rq_exception_class"),  # 0024: failure groups
)
# Text columns that are never compared with another host's or a user's
# value, so their collation does not matter.
NOT_COMPARED = {
    ("robust_queue_job", "backend_alias"),
    ("robust_queue_batch", "backend_alias"),
    ("robust_queue_batch", "description"),
    ("robust_queue_batch", "on_success"),
    ("robust_queue_batch", "on_failure"),
    ("robust_queue_batch", "on_finish"),
    ("robust_queue_process", "hostname"),
    ("robust_queue_process", "kind"),
    ("robust_queue_process", "name"),
    ("robust_queue_recurring_task", "backend_alias"),
    ("robust_queue_recurring_task", "schedule"),
    ("robust_queue_recurring_task", "task_path"),
    # An IANA zone name, read by zoneinfo, never filtered on (0028).
    ("robust_queue_recurring_task", "time_zone"),
    # Compared through its hash (key_hash) only.
    ("robust_queue_unique_key", "key"),
}


def _insert_ready(queue_name: str) -> Job:
    job = Job(
        task_path="testproject.tasks.add",
        queue_name=queue_name,
        backend_alias="default",
        enqueued_at=timezone.now(),
    )
    [created] = Job.objects.enqueue_all([job])
    return created


class ByteExactTests(TestCase):
    def test_a_claim_takes_only_its_own_queue(self) -> None:
        """A worker on ``default`` does not claim ``DEFAULT``, ``default ``
        or ``défault``."""
        for name in LOOK_ALIKES:
            _insert_ready(name)
        mine = _insert_ready("default")
        claimed = claim(10, queue_name="default")
        self.assertEqual([row.job.pk for row in claimed], [mine.pk])
        self.assertEqual(ReadyExecution.objects.count(), len(LOOK_ALIKES))

    def test_every_look_alike_is_a_queue_of_its_own(self) -> None:
        for name in ("default", *LOOK_ALIKES):
            _insert_ready(name)
        self.assertEqual(ReadyExecution.objects.queue_names(), sorted(["default", *LOOK_ALIKES]))

    def test_a_pause_stops_only_its_own_queue(self) -> None:
        """Pausing ``mail_bulk`` leaves ``MAIL_BULK`` running."""
        Queue("mail_bulk").pause()
        other = _insert_ready("MAIL_BULK")
        _insert_ready("mail_bulk")
        self.assertIs(Queue("MAIL_BULK").is_paused(), False)
        self.assertIs(Queue("mail_bulk").is_paused(), True)
        [(queue_name, excluded)] = QueueSelector(("*",), using="default").plan()
        claimed = ReadyExecution.objects.claim(
            10,
            process_id=None,
            worker_id="w",
            queue_name=queue_name,
            exclude_queues=excluded,
        )
        self.assertEqual([row.job.pk for row in claimed], [other.pk])

    def test_look_alike_pauses_are_distinct_rows(self) -> None:
        for name in ("mail_bulk", "MAIL_BULK", "mail_bulk "):
            Pause.objects.create(queue_name=name)
        self.assertEqual(Pause.objects.filter(queue_name="mail_bulk").count(), 1)

    def test_look_alike_keys_have_their_own_semaphores(self) -> None:
        """Keys ``acct`` and ``ACCT`` do not share one slot."""
        lease = timedelta(minutes=5)
        for key in ("acct", "ACCT", "acct ", "ácct"):
            with self.subTest(key=key):
                self.assertIs(Semaphore.objects.wait(key, 1, lease), True)
        self.assertIs(Semaphore.objects.wait("acct", 1, lease), False)
        self.assertEqual(Semaphore.objects.count(), 4)

    def test_result_ids_differing_in_case_are_two_jobs(self) -> None:
        job = _insert_ready("default")
        swapped = job.result_id.swapcase()
        self.assertFalse(Job.objects.filter(result_id=swapped).exists())


class CollationTests(TestCase):
    def setUp(self) -> None:
        if connection.vendor != "mysql":
            self.skipTest("only MySQL/MariaDB collations ignore case")

    def collations(self, data_type: str) -> dict[tuple[str, str], str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM "
                "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                "AND TABLE_NAME LIKE %s AND DATA_TYPE = %s",
                ["robust\\_queue\\_%", data_type],
            )
            return {(table, column): name for table, column, name in cursor.fetchall()}

    def test_compared_columns_have_a_binary_collation_on_mysql(self) -> None:
        """A later migration that rewrites a column must keep it binary."""
        expected = _migration.binary_collation(connection)
        found = self.collations("varchar")
        for table, column in COMPARED:
            with self.subTest(table=table, column=column):
                self.assertEqual(found.get((table, column)), expected)

    def test_every_text_column_is_binary_or_known_not_to_be_compared(self) -> None:
        """A new column that is compared must be added to a migration
        applying the binary collation (and to COMPARED above)."""
        expected = _migration.binary_collation(connection)
        unlisted = {
            key
            for key, collation in self.collations("varchar").items()
            if collation != expected and key not in NOT_COMPARED
        }
        self.assertEqual(unlisted, set())


class TaskPathTests(TestCase):
    def test_clearing_by_task_takes_only_that_task(self) -> None:
        """``prune --task`` of a look-alike path deletes nothing of
        ``testproject.tasks.add``."""
        result = tasks.add.enqueue(1, 2)
        self.assertEqual(work_off(), 1)
        retention = Retention(finished_older_than=timedelta(0), task_path="testproject.tasks.ADD")
        self.assertEqual(retention.clear("default"), {"finished": 0, "failed": 0})
        self.assertTrue(Job.objects.filter(result_id=result.id).exists())
        self.assertEqual(Job.objects.filter(task_path="testproject.tasks.ADD").count(), 0)
