"""Queue caps: one lock row per capped queue (``models/queue_cap.py``)."""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations, models

_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

COLUMNS = (("robust_queue_queue_cap", "queue_name"),)


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):
    dependencies = [
        ("robust_queue", "0008_cancellation"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueueCap",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("queue_name", models.CharField(max_length=64, unique=True)),
                ("claims", models.BigIntegerField(default=0)),
            ],
            options={"db_table": "robust_queue_queue_cap", "default_permissions": ()},
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
