"""Result ids have one index, the unique one (migration 0020 drops the
pattern index PostgreSQL got beside it); lookups by id still use it."""

from __future__ import annotations

import importlib
from unittest import skipUnless

from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.test import TestCase

from robust_queue.models import Job
from testproject import tasks

_migration = importlib.import_module("robust_queue.migrations.0020_drop_result_id_pattern_index")


def indexes_on_result_id() -> list[dict[str, object]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Job._meta.db_table)
    # A unique constraint is reported as one, with its index not apart.
    return [
        c
        for c in constraints.values()
        if c["columns"] == ["result_id"] and (c["index"] or c["unique"])
    ]


class ResultIdIndexTests(TestCase):
    def test_one_unique_index_serves_result_ids(self) -> None:
        self.assertEqual([index["unique"] for index in indexes_on_result_id()], [True])
        result = tasks.add.enqueue(1, 2)
        job = Job.objects.get(result_id=result.id)
        with self.assertRaises(IntegrityError), transaction.atomic():
            Job.objects.filter(pk=job.pk).update(result_id="x")
            Job.objects.create(
                result_id="x",
                task_path=job.task_path,
                queue_name="q",
                backend_alias="b",
                enqueued_at=job.enqueued_at,
            )

    @skipUnless(connection.vendor == "postgresql", "only PostgreSQL had the pattern index")
    def test_the_migration_drops_the_pattern_index_and_gives_it_back(self) -> None:
        with connection.schema_editor() as editor:
            _migration._backwards(apps, editor)
        self.assertEqual(sorted(index["unique"] for index in indexes_on_result_id()), [False, True])
        with connection.schema_editor() as editor:
            _migration._forwards(apps, editor)
            _migration._forwards(apps, editor)  # already gone: nothing to do
        self.assertEqual([index["unique"] for index in indexes_on_result_id()], [True])
