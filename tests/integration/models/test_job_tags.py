"""Job tags: written with the job, deleted with it by the database, and
never on the plain enqueue path."""

from __future__ import annotations

import importlib
from datetime import timedelta

from django.db import connection, transaction
from django.test import TestCase, TransactionTestCase
from django.test.utils import CaptureQueriesContext

import robust_queue
from robust_queue.exceptions import EnqueueError
from robust_queue.models import Job, JobTag
from robust_queue.models.locking import delete_by_pk
from robust_queue.models.retention import Retention
from testproject import coordination_tasks as co
from testproject import tasks
from tests.helpers import work_off


def _tags_of(result_id: str) -> list[str]:
    return Job.objects.get(result_id=result_id).tag_names()


class JobTagTests(TestCase):
    def test_a_tagged_task_writes_its_tags_with_the_job(self) -> None:
        result = co.tagged.enqueue(1)
        self.assertEqual(_tags_of(result.id), ["billing", "eu"])

    def test_the_enqueue_context_adds_tags_without_duplicates(self) -> None:
        with robust_queue.job_tags("import-42", "eu"):
            tagged = co.tagged.enqueue(1)
            plain = tasks.add.enqueue(1, 2)
        self.assertEqual(_tags_of(tagged.id), ["billing", "eu", "import-42"])
        self.assertEqual(_tags_of(plain.id), ["eu", "import-42"])

    def test_bulk_enqueue_tags_each_job_as_its_own(self) -> None:
        results = robust_queue.enqueue_all(
            [(co.tagged, (1,), {}), (tasks.add, (1, 2), {}), (co.tagged, (2,), {})]
        )
        self.assertEqual(
            [_tags_of(r.id) for r in results], [["billing", "eu"], [], ["billing", "eu"]]
        )
        self.assertEqual(JobTag.objects.count(), 4)

    def test_plain_jobs_write_no_tag_row(self) -> None:
        with CaptureQueriesContext(connection) as queries:
            tasks.add.enqueue(1, 2)
        self.assertFalse(any("job_tag" in q["sql"] for q in queries.captured_queries))
        self.assertFalse(JobTag.objects.exists())

    def test_a_plain_enqueue_stays_one_statement_on_postgresql(self) -> None:
        if connection.vendor != "postgresql":
            self.skipTest("the one-statement enqueue is PostgreSQL's")
        with CaptureQueriesContext(connection) as queries:
            tasks.add.enqueue(1, 2)
        self.assertEqual(len(queries.captured_queries), 1)
        with CaptureQueriesContext(connection) as queries:
            co.tagged.enqueue(1)
        self.assertGreater(len(queries.captured_queries), 1)

    def test_a_duplicate_of_a_unique_tagged_task_writes_no_tags(self) -> None:
        first = co.tagged_unique.enqueue(1)
        again = co.tagged_unique.enqueue(1)
        self.assertEqual(first.id, again.id)
        self.assertEqual(JobTag.objects.count(), 1)

    def test_a_job_discarded_by_its_concurrency_limit_writes_no_tags(self) -> None:
        co.tagged_discarding.enqueue(1)
        co.tagged_discarding.enqueue(2)
        self.assertEqual(Job.objects.count(), 1)
        self.assertEqual(JobTag.objects.count(), 1)

    def test_too_many_tags_at_enqueue_write_nothing(self) -> None:
        with robust_queue.job_tags(*(f"t{i}" for i in range(19))):
            with self.assertRaisesMessage(EnqueueError, "a job takes at most 20"):
                co.tagged.enqueue(1)
        self.assertFalse(Job.objects.exists())

    def test_a_rolled_back_enqueue_leaves_no_tags(self) -> None:
        with self.assertRaises(RuntimeError), transaction.atomic():
            co.tagged.enqueue(1)
            raise RuntimeError("rollback")
        self.assertFalse(JobTag.objects.exists())

    def test_look_alike_tags_are_distinct(self) -> None:
        """Byte-exact on MySQL/MariaDB too: 'EU' is not 'eu'."""
        with robust_queue.job_tags("EU"):
            result = co.tagged.enqueue(1)
        self.assertEqual(_tags_of(result.id), ["EU", "billing", "eu"])
        self.assertEqual(JobTag.objects.filter(tag="eu").count(), 1)


class JobTagCascadeTests(TransactionTestCase):
    """Every path that deletes a job deletes its tags: the database does."""

    def test_a_plain_sql_delete_of_the_job_deletes_its_tags(self) -> None:
        result = co.tagged.enqueue(1)
        job = Job.objects.get(result_id=result.id)
        work_off()
        with transaction.atomic():
            delete_by_pk(Job.objects.all(), [job.pk])
        self.assertFalse(JobTag.objects.exists())

    def test_retention_and_discard_delete_the_tags(self) -> None:
        co.tagged.enqueue(1)
        work_off()
        waiting = Job.objects.get(result_id=co.tagged.enqueue(2).id)
        Retention(finished_older_than=timedelta(seconds=-1)).clear("default")
        self.assertEqual(JobTag.objects.count(), 2, "only the finished job's tags went")
        self.assertTrue(waiting.discard())
        self.assertFalse(JobTag.objects.exists())

    def test_the_cascade_and_collation_are_in_place(self) -> None:
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA foreign_key_list(robust_queue_job_tag)")
                self.assertEqual(
                    [(row[2], row[6]) for row in cursor.fetchall()],
                    [("robust_queue_job", "CASCADE")],
                )
            return
        if connection.vendor == "mysql":
            collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                    "DATABASE() AND TABLE_NAME = 'robust_queue_job_tag' AND COLUMN_NAME = 'tag'"
                )
                self.assertEqual(cursor.fetchone(), (collation.binary_collation(connection),))
        schema = "DATABASE()" if connection.vendor == "mysql" else "current_schema()"
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE "
                f"CONSTRAINT_NAME = 'rq_job_tag_job_cascade' AND CONSTRAINT_SCHEMA = {schema}"
            )
            self.assertEqual(cursor.fetchone(), ("CASCADE",))
