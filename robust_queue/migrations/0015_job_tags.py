"""Job tags: one row per (job, tag), deleted with their job by the database.

Django cannot declare ``ON DELETE CASCADE`` (before 6.1), and the jobs are
deleted with plain SQL that skips its collector (retention, discard), so
this migration adds the cascading foreign key itself: ``ALTER TABLE`` on
PostgreSQL and MySQL/MariaDB; on SQLite, which cannot add a constraint to
a table, the new (empty) table is created again with it. The tag column
gets the binary collation on MySQL/MariaDB (0004).

A later migration that rebuilds this table on SQLite (an ``AlterField``)
drops the cascade: add it again there
(``tests/integration/models/test_job_tags.py`` checks it on every vendor).
"""

import importlib
from typing import Any

import django.db.models.deletion
from django.db import migrations, models

_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

TABLE = "robust_queue_job_tag"
CONSTRAINT = "rq_job_tag_job_cascade"


def _forwards(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    _collation.apply_binary_collation(connection, ((TABLE, "tag"),))
    quote = connection.ops.quote_name
    if connection.vendor == "sqlite":
        _recreate_with_cascade(connection)
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"ALTER TABLE {quote(TABLE)} ADD CONSTRAINT {quote(CONSTRAINT)} "
            f"FOREIGN KEY ({quote('job_id')}) REFERENCES {quote('robust_queue_job')} "
            f"({quote('id')}) ON DELETE CASCADE"
        )


def _recreate_with_cascade(connection: Any) -> None:
    """SQLite: the same table and indexes, job_id now a cascading key."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT type, sql FROM sqlite_master WHERE tbl_name = %s AND sql IS NOT NULL",
            [TABLE],
        )
        rows = cursor.fetchall()
        (table_sql,) = [sql for kind, sql in rows if kind == "table"]
        column = '"job_id" bigint NOT NULL'
        assert column in table_sql, table_sql
        cascade = f'{column} REFERENCES "robust_queue_job" ("id") ON DELETE CASCADE'
        cursor.execute(f'DROP TABLE "{TABLE}"')
        cursor.execute(table_sql.replace(column, cascade))
        for kind, sql in rows:
            if kind == "index":
                cursor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0014_reschedule_permission'),
    ]

    operations = [
        migrations.CreateModel(
            name='JobTag',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tag', models.CharField(max_length=100)),
                ('job', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='tags', to='robust_queue.job')),
            ],
            options={
                'db_table': 'robust_queue_job_tag',
                'default_permissions': (),
                'indexes': [models.Index(fields=['tag', 'job'], name='rq_job_tag_by_tag')],
                'constraints': [models.UniqueConstraint(fields=('job', 'tag'), name='rq_job_tag_unique')],
            },
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
