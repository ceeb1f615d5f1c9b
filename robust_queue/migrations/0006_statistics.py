"""Statistics per (minute, queue, task); see models/statistic.py."""

import importlib
from typing import Any

from django.db import migrations, models

# A module name that starts with a digit cannot be imported by statement.
_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")
# The key columns compare byte-exact on MySQL/MariaDB too: ``default`` and
# ``DEFAULT`` are two queues, and an upsert must not add one to the other.
COLUMNS = (
    ("robust_queue_statistic", "queue_name"),
    ("robust_queue_statistic", "task_path"),
)


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0005_unique_jobs'),
    ]

    operations = [
        migrations.CreateModel(
            name='Statistic',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('minute', models.DateTimeField()),
                ('queue_name', models.CharField(max_length=64)),
                ('task_path', models.CharField(max_length=255)),
                ('finished', models.BigIntegerField(default=0)),
                ('failed', models.BigIntegerField(default=0)),
                ('retried', models.BigIntegerField(default=0)),
                ('discarded', models.BigIntegerField(default=0)),
                ('wait_seconds', models.FloatField(default=0.0)),
                ('run_seconds', models.FloatField(default=0.0)),
                ('wait_0', models.BigIntegerField(default=0)),
                ('wait_1', models.BigIntegerField(default=0)),
                ('wait_2', models.BigIntegerField(default=0)),
                ('wait_3', models.BigIntegerField(default=0)),
                ('wait_4', models.BigIntegerField(default=0)),
                ('wait_5', models.BigIntegerField(default=0)),
                ('wait_6', models.BigIntegerField(default=0)),
                ('wait_7', models.BigIntegerField(default=0)),
                ('wait_8', models.BigIntegerField(default=0)),
                ('wait_9', models.BigIntegerField(default=0)),
                ('wait_10', models.BigIntegerField(default=0)),
                ('wait_11', models.BigIntegerField(default=0)),
                ('wait_12', models.BigIntegerField(default=0)),
                ('wait_13', models.BigIntegerField(default=0)),
                ('wait_14', models.BigIntegerField(default=0)),
                ('wait_15', models.BigIntegerField(default=0)),
                ('run_0', models.BigIntegerField(default=0)),
                ('run_1', models.BigIntegerField(default=0)),
                ('run_2', models.BigIntegerField(default=0)),
                ('run_3', models.BigIntegerField(default=0)),
                ('run_4', models.BigIntegerField(default=0)),
                ('run_5', models.BigIntegerField(default=0)),
                ('run_6', models.BigIntegerField(default=0)),
                ('run_7', models.BigIntegerField(default=0)),
                ('run_8', models.BigIntegerField(default=0)),
                ('run_9', models.BigIntegerField(default=0)),
                ('run_10', models.BigIntegerField(default=0)),
                ('run_11', models.BigIntegerField(default=0)),
                ('run_12', models.BigIntegerField(default=0)),
                ('run_13', models.BigIntegerField(default=0)),
                ('run_14', models.BigIntegerField(default=0)),
                ('run_15', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'robust_queue_statistic',
                'permissions': [('view_metrics', 'Can view the Prometheus metrics')],
                'constraints': [models.UniqueConstraint(fields=('minute', 'queue_name', 'task_path'), name='rq_statistic_key')],
            },
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
