"""Fair groups: a job's group, and its round among the ready jobs.

- ``job.group_key`` and ``ready_execution.group_key``: the job's fair group
  (None: none); ``ready_execution.fair_round`` (database default 0, which
  every ungrouped job keeps).
- The claim's two indexes gain the round between priority and job, the
  order workers take jobs in.
- ``rq_ready_group_round`` (queue, group, priority, round): a group's last
  round, read when one of its jobs becomes ready. Partial (grouped rows
  only) where the database has partial indexes, so ungrouped jobs' inserts
  do not maintain it; MySQL/MariaDB have none and index every row. Made
  here rather than in the model's ``Meta``, which would warn (models.W037)
  on MySQL/MariaDB.
- On MySQL/MariaDB both group columns get the binary collation (0004):
  groups compare byte-exact, as queue names and keys do.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations, models

_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

GROUP_INDEX = "rq_ready_group_round"
READY_TABLE = "robust_queue_ready_execution"


def _create_group_index(apps: Any, schema_editor: Any) -> None:
    # Groups compare byte-exact, as queue names and keys do (0004).
    _collation.apply_binary_collation(
        schema_editor.connection,
        (("robust_queue_job", "group_key"), (READY_TABLE, "group_key")),
    )
    quote = schema_editor.quote_name
    columns = ", ".join(quote(c) for c in ("queue_name", "group_key", "priority", "fair_round"))
    sql = f"CREATE INDEX {quote(GROUP_INDEX)} ON {quote(READY_TABLE)} ({columns})"
    if schema_editor.connection.features.supports_partial_indexes:
        sql += f" WHERE {quote('group_key')} IS NOT NULL"
    _execute(schema_editor, sql)


def _drop_group_index(apps: Any, schema_editor: Any) -> None:
    quote = schema_editor.quote_name
    on_table = f" ON {quote(READY_TABLE)}" if schema_editor.connection.vendor == "mysql" else ""
    _execute(schema_editor, f"DROP INDEX {quote(GROUP_INDEX)}{on_table}")


def _execute(schema_editor: Any, sql: str) -> None:
    # A cursor, not schema_editor.execute(): RunPython runs in a
    # transaction, where the schema editor refuses DDL on MySQL/MariaDB
    # (which commits it anyway), as 0004 does.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0030_batch_one_id")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="group_key",
            field=models.CharField(blank=True, max_length=100, null=True),
        ),
        migrations.AddField(
            model_name="readyexecution",
            name="group_key",
            field=models.CharField(blank=True, max_length=100, null=True),
        ),
        migrations.AddField(
            model_name="readyexecution",
            name="fair_round",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RemoveIndex(model_name="readyexecution", name="rq_ready_poll_all"),
        migrations.RemoveIndex(model_name="readyexecution", name="rq_ready_poll_queue"),
        migrations.AddIndex(
            model_name="readyexecution",
            index=models.Index(fields=["-priority", "fair_round", "job"], name="rq_ready_poll_all"),
        ),
        migrations.AddIndex(
            model_name="readyexecution",
            index=models.Index(
                fields=["queue_name", "-priority", "fair_round", "job"],
                name="rq_ready_poll_queue",
            ),
        ),
        migrations.RunPython(_create_group_index, _drop_group_index, elidable=False),
    ]
