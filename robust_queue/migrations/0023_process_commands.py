"""Commands an operator sends a process from the admin (quiet, stop: a
nullable column that workers read on their heartbeat, and the permission to
send them), and every operator's actions in one table.

The column is nullable: workers of the previous release, still running
during a rolling deploy, register rows without it and never read it.
Compared columns are binary on MySQL/MariaDB (0004): a queue ``DEFAULT``'s
actions are not ``default``'s.
"""

import importlib
from typing import Any

import django.utils.timezone
from django.db import migrations, models

_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

COLUMNS = (
    ("robust_queue_process", "command"),
    ("robust_queue_queue_action", "verb"),
    ("robust_queue_queue_action", "queue_name"),
    ("robust_queue_queue_action", "username"),
)


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0022_queue_table_storage")]

    operations = [
        migrations.AlterModelOptions(
            name="process",
            options={
                "permissions": [("command_process", "Can quiet and stop worker processes")],
                "verbose_name_plural": "processes",
            },
        ),
        migrations.AddField(
            model_name="process",
            name="command",
            field=models.CharField(
                blank=True,
                choices=[
                    ("quiet", "Quiet asked"),
                    ("quieted", "Quiet"),
                    ("stop", "Stop asked"),
                    ("stopping", "Stopping"),
                ],
                max_length=16,
                null=True,
            ),
        ),
        migrations.CreateModel(
            name="QueueAction",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("action_time", models.DateTimeField(default=django.utils.timezone.now)),
                ("user_id", models.IntegerField(blank=True, null=True)),
                ("username", models.CharField(max_length=150)),
                ("verb", models.CharField(max_length=32)),
                ("count", models.BigIntegerField(blank=True, null=True)),
                ("queue_name", models.CharField(blank=True, default="", max_length=255)),
                ("job_id", models.BigIntegerField(blank=True, null=True)),
                ("message", models.TextField()),
            ],
            options={
                "db_table": "robust_queue_queue_action",
                "default_permissions": ("view",),
                "indexes": [
                    models.Index(fields=["username", "id"], name="rq_action_user"),
                    models.Index(fields=["verb", "id"], name="rq_action_verb"),
                    models.Index(fields=["queue_name", "id"], name="rq_action_queue"),
                ],
            },
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
