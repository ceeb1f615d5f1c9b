"""Indexes that search and group every failure, not only the newest.

- PostgreSQL: the ``pg_trgm`` extension (``CREATE EXTENSION IF NOT
  EXISTS``: a trusted extension since PostgreSQL 13, so the database's
  owner may create it; elsewhere it needs a superuser) and a trigram GIN
  index on the failure's text (exception class path and traceback): the
  admin's error search. Without the right to create the extension the
  migration logs a warning and goes on: the admin then searches the newest
  failures only and says so (``robust_queue.models.sql.failure_search``).
  The exception class index of 0012 becomes ``(class, id)``: failure
  groups read each class's count and newest failure through it.
- MariaDB/MySQL: a stored generated column with the same text, unescaped,
  under a ``FULLTEXT`` index, and a virtual column of the exception class
  with a ``(class, id)`` index. The ``ALTER TABLE`` rebuilds the failed
  table once.
- SQLite: nothing (the admin searches the newest failures).

Indexes are built ``CONCURRENTLY`` on PostgreSQL (the migration is not
atomic): failures go on being written while they build. The model's state
does not change: the columns and indexes are the database's own.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from django.db import DatabaseError, migrations

logger = logging.getLogger("robust_queue")

TABLE = "robust_queue_failed_execution"
SEARCH_INDEX = "rq_failed_search"
OLD_CLASS_INDEX = "rq_failed_exception"
CLASS_INDEX = "rq_failed_exception_id"
CLASS = "(error ->> 'exception_class_path')"
TEXT = (
    "(COALESCE((error ->> 'exception_class_path'), '') || ' ' || "
    "COALESCE((error ->> 'traceback'), ''))"
)
MYSQL_TEXT = (
    "CONCAT_WS(' ', JSON_UNQUOTE(JSON_EXTRACT(error, '$.exception_class_path')), "
    "JSON_UNQUOTE(JSON_EXTRACT(error, '$.traceback')))"
)
MYSQL_CLASS = "LEFT(JSON_UNQUOTE(JSON_EXTRACT(error, '$.exception_class_path')), 255)"
NO_TRIGRAMS = (
    "robust_queue 0024: could not create the pg_trgm extension (%s). The admin's "
    "error search reads only the newest failures. As a superuser, run "
    '"CREATE EXTENSION pg_trgm;" in this database, then "manage.py migrate '
    'robust_queue 0023" and "manage.py migrate" to build the index.'
)


def _binary(connection: Any) -> str:
    """The binary collation (0004): classes differing in case are two."""
    module = importlib.import_module("robust_queue.migrations.0004_binary_collation")
    return str(module.binary_collation(connection))


def _forwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _postgresql_class_index(schema_editor)
        _postgresql_search_index(schema_editor)
    elif vendor == "mysql":
        schema_editor.execute(
            f"ALTER TABLE {TABLE} "
            f"ADD COLUMN rq_error_text LONGTEXT AS ({MYSQL_TEXT}) STORED, "
            f"ADD COLUMN rq_exception_class VARCHAR(255) CHARACTER SET utf8mb4 "
            f"COLLATE {_binary(schema_editor.connection)} AS ({MYSQL_CLASS}) VIRTUAL, "
            f"ADD FULLTEXT INDEX {SEARCH_INDEX} (rq_error_text), "
            f"ADD INDEX {CLASS_INDEX} (rq_exception_class, id)"
        )


def _backwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SEARCH_INDEX}")
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {OLD_CLASS_INDEX} ON {TABLE} ({CLASS})"
        )
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {CLASS_INDEX}")
    elif vendor == "mysql":
        schema_editor.execute(
            f"ALTER TABLE {TABLE} DROP INDEX {SEARCH_INDEX}, DROP INDEX {CLASS_INDEX}, "
            "DROP COLUMN rq_error_text, DROP COLUMN rq_exception_class"
        )


def _postgresql_class_index(schema_editor: Any) -> None:
    schema_editor.execute(
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {CLASS_INDEX} ON {TABLE} ({CLASS}, id)"
    )
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {OLD_CLASS_INDEX}")


def _postgresql_search_index(schema_editor: Any) -> None:
    try:
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError as exc:
        logger.warning(NO_TRIGRAMS, str(exc).strip())
        return
    schema_editor.execute(
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_INDEX} ON {TABLE} "
        f"USING gin ({TEXT} gin_trgm_ops)"
    )


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction.
    atomic = False

    dependencies = [("robust_queue", "0023_process_commands")]

    operations = [
        migrations.RunPython(_forwards, _backwards, elidable=False),
    ]
