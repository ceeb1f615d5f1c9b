"""Unique jobs: one row per unique key, naming the job that holds it.

The key hash is compared by a unique index and the result id against the
job's (binary) result id: both get the binary collation on MySQL/MariaDB
(see 0004).
"""

from importlib import import_module
from typing import Any

import django.utils.timezone
from django.db import migrations, models

# A module name that starts with a digit is imported by name.
_collation = import_module("robust_queue.migrations.0004_binary_collation")

COLUMNS = (
    ("robust_queue_unique_key", "key_hash"),
    ("robust_queue_unique_key", "result_id"),
)


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0004_binary_collation'),
    ]

    operations = [
        migrations.CreateModel(
            name='UniqueKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key_hash', models.CharField(max_length=64, unique=True)),
                ('key', models.CharField(max_length=255)),
                ('result_id', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'db_table': 'robust_queue_unique_key',
            },
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
