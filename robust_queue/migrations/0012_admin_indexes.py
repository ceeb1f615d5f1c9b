"""Indexes for the admin's bounded pages.

- ``job.enqueued_at``: "enqueued in the last hour" on the job lists;
- ``unique_key.result_id``: a job's unique key on its page;
- ``statistic (task_path, minute)``: one task's figures over a window;
- ``failed_execution.created_at``: "failed in the last hour";
- on PostgreSQL, ``failed_execution (error ->> 'exception_class_path')``:
  the failed list's exception filter (elsewhere it reads the failed table);
- ``job.concurrency_key`` where it is not empty, on databases with partial
  indexes (PostgreSQL, SQLite): the concurrency-key filter. Most jobs have
  no key, so the index costs their inserts nothing. MySQL/MariaDB have no
  partial indexes and get none: their filter reads only the newest jobs
  (``robust_queue/admin/jobs/key_filters.py``). Created here rather than in the
  model's ``Meta``, which would warn (models.W037) on MySQL/MariaDB.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

KEY_INDEX = "rq_job_concurrency_key"
EXCEPTION_INDEX = "rq_failed_exception"


def _create_key_index(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if not connection.features.supports_partial_indexes:
        return
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE INDEX {quote(KEY_INDEX)} ON {quote('robust_queue_job')} "
        f"({quote('concurrency_key')}) WHERE {quote('concurrency_key')} > ''"
    )


def _drop_key_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.features.supports_partial_indexes:
        schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(KEY_INDEX)}")


def _create_exception_index(apps: Any, schema_editor: Any) -> None:
    # The expression the admin filters by (KeyTextTransform), on the one
    # database whose planner matches it to an index whatever the key.
    if schema_editor.connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE INDEX {quote(EXCEPTION_INDEX)} ON {quote('robust_queue_failed_execution')} "
        f"(({quote('error')} ->> 'exception_class_path'))"
    )


def _drop_exception_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(EXCEPTION_INDEX)}")


class Migration(migrations.Migration):

    dependencies = [
        ("robust_queue", "0011_job_task_path_binary"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["enqueued_at"], name="rq_job_enqueued"),
        ),
        migrations.AddIndex(
            model_name="uniquekey",
            index=models.Index(fields=["result_id"], name="rq_unique_key_result"),
        ),
        migrations.AddIndex(
            model_name="statistic",
            index=models.Index(fields=["task_path", "minute"], name="rq_statistic_task"),
        ),
        migrations.AddIndex(
            model_name="failedexecution",
            index=models.Index(fields=["created_at"], name="rq_failed_created"),
        ),
        migrations.RunPython(_create_key_index, _drop_key_index, elidable=False),
        migrations.RunPython(_create_exception_index, _drop_exception_index, elidable=False),
    ]
