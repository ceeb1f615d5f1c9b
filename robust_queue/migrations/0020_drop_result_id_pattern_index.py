"""PostgreSQL: drop the pattern index Django adds beside the unique index of
``result_id`` (``varchar_pattern_ops``, for ``LIKE 'abc%'``).

Result ids are only ever looked up whole (``=`` and ``IN``), which the
unique index serves. The pattern index only cost every job one more index
entry at enqueue and at each of its updates that PostgreSQL cannot make in
place (the claim's stamp, the finish), plus its share of vacuum and disk.
Other databases never had it. A later migration that alters ``result_id``
would have Django create it again: drop it there too.
"""

from typing import Any

from django.db import migrations


def _pattern_index(apps: Any, schema_editor: Any) -> tuple[str, str]:
    """(the index's quoted name, its table's): the name Django gives it,
    by the rule that made it in 0001."""
    table = apps.get_model("robust_queue", "Job")._meta.db_table
    name = schema_editor._create_index_name(table, ["result_id"], suffix="_like")
    return schema_editor.quote_name(name), schema_editor.quote_name(table)


def _forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        index, _ = _pattern_index(apps, schema_editor)
        schema_editor.execute(f"DROP INDEX IF EXISTS {index}")


def _backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        index, table = _pattern_index(apps, schema_editor)
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {index} ON {table} (result_id varchar_pattern_ops)"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("robust_queue", "0019_batches"),
    ]

    operations = [
        migrations.RunPython(_forwards, _backwards, elidable=False),
    ]
