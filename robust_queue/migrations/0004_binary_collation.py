"""Queue names, pauses and keys compare byte-exact on MySQL/MariaDB too.

MySQL's and MariaDB's default collations ignore case, accents and trailing
spaces: a worker on ``default`` would claim jobs of ``DEFAULT`` and
``défault``, and keys ``acct`` and ``ACCT`` would share one semaphore.
PostgreSQL (deterministic collations) and SQLite (BINARY) already compare
bytes. This migration gives the compared columns a binary collation that
does not pad (``utf8mb4_nopad_bin`` on MariaDB, ``utf8mb4_0900_bin`` on
MySQL >= 8.0.17) and does nothing elsewhere. The model state does not
change: collation names are vendor-specific, and every vendor must see the
same migrations.

A later ``AlterField`` of one of these columns rewrites it without the
collation on MySQL/MariaDB; re-apply ``binary_collation`` after it
(``tests/integration/models/test_byte_exact.py`` checks the columns).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

# (table, column) of every column compared with = / IN / a unique index.
COLUMNS = (
    ("robust_queue_job", "queue_name"),
    ("robust_queue_job", "concurrency_key"),
    ("robust_queue_job", "result_id"),
    ("robust_queue_ready_execution", "queue_name"),
    ("robust_queue_scheduled_execution", "queue_name"),
    ("robust_queue_blocked_execution", "queue_name"),
    ("robust_queue_blocked_execution", "concurrency_key"),
    ("robust_queue_pause", "queue_name"),
    ("robust_queue_semaphore", "key"),
    ("robust_queue_recurring_task", "key"),
    ("robust_queue_recurring_task", "queue_name"),
    ("robust_queue_recurring_execution", "task_key"),
)


def binary_collation(connection: Any) -> str:
    """The binary, no-pad utf8mb4 collation of this MySQL/MariaDB server."""
    if connection.mysql_is_mariadb:
        return "utf8mb4_nopad_bin"
    if connection.mysql_version >= (8, 0, 17):
        return "utf8mb4_0900_bin"
    # Older MySQL has no binary collation that keeps trailing spaces.
    return "utf8mb4_bin"


def apply_binary_collation(connection: Any, columns: Any = COLUMNS) -> None:
    """Give ``columns`` the binary collation (MySQL/MariaDB only)."""
    if connection.vendor != "mysql":
        return
    collation = binary_collation(connection)
    with connection.cursor() as cursor:
        for table, column in columns:
            cursor.execute(
                "SELECT COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s "
                "AND COLUMN_NAME = %s",
                [table, column],
            )
            column_type, nullable = cursor.fetchone()
            null = "NULL" if nullable == "YES" else "NOT NULL"
            cursor.execute(
                f"ALTER TABLE {connection.ops.quote_name(table)} MODIFY "
                f"{connection.ops.quote_name(column)} {column_type} "
                f"CHARACTER SET utf8mb4 COLLATE {collation} {null}"
            )


def _forwards(apps: Any, schema_editor: Any) -> None:
    apply_binary_collation(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("robust_queue", "0003_recurring_backend_alias"),
    ]

    # Reversing keeps the binary collation: going back to a collation that
    # ignores case could break the unique indexes of existing rows.
    operations = [
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
