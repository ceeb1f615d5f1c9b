"""The job columns the enqueue's own INSERT writes, and those it leaves to
their NULL (``sql/statements.py``, ``ENQUEUE_COLUMNS``)."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.models import Job
from robust_queue.models.sql.statements import ENQUEUE_COLUMNS
from testproject import tasks

from .support import dialect

# Columns a new job has no value in. A new column of Job is either written
# at enqueue (ENQUEUE_COLUMNS) or, if no new job the enqueue's INSERT
# writes has a value in it and it is NULL by default, listed here.
LEFT_OUT = {
    "started_at",
    "last_attempted_at",
    "finished_at",
    "return_value",
    "progress",
    "attempt_logs",
    "steps",
    "group_key",
}


def columns() -> set[str]:
    return {field.name for field in Job._meta.concrete_fields if not field.primary_key}


class EnqueueColumnsTests(SimpleTestCase):
    def test_every_column_is_written_or_left_out_on_purpose(self) -> None:
        """A new column fails here until it is put in one list."""
        self.assertEqual(ENQUEUE_COLUMNS - columns(), set())
        self.assertEqual(columns() - ENQUEUE_COLUMNS, LEFT_OUT)

    def test_a_column_left_out_is_null_by_default(self) -> None:
        """The row gets what the model would have written: NULL."""
        for name in LEFT_OUT:
            field = Job._meta.get_field(name)
            with self.subTest(name):
                self.assertIs(field.null, True)
                self.assertIsNone(field.get_default())

    def test_a_job_the_backend_makes_has_no_value_in_a_column_left_out(self) -> None:
        """Leaving the columns out loses nothing an enqueue sets."""
        task = tasks.add.using(priority=5)
        _, job, _, _ = task.get_backend()._prepare(task, (1, 2), {})
        for name in LEFT_OUT:
            with self.subTest(name):
                self.assertIsNone(getattr(job, name))

    def test_each_dialect_s_insert_names_only_the_columns_written(self) -> None:
        """The one-row, many-row and unnest INSERTs: the same columns."""
        for vendor in ("postgresql", "mysql", "sqlite"):
            statements, wrapper = dialect(vendor)
            insert, row = statements._job_insert
            texts = [insert]
            if vendor == "postgresql":
                texts += [statements._enqueue_one_sql, statements._enqueue_statement]  # type: ignore[attr-defined]
            with self.subTest(vendor):
                self.assertEqual({field.name for field in statements.job_fields}, ENQUEUE_COLUMNS)
                self.assertEqual(row.count("%s"), len(ENQUEUE_COLUMNS))
                for text in texts:
                    for name in ENQUEUE_COLUMNS | LEFT_OUT:
                        column = wrapper.ops.quote_name(Job._meta.get_field(name).column)
                        self.assertIs(column in text, name in ENQUEUE_COLUMNS, (name, text))
