"""Recurring tasks an operator can disable; tasks paused as well as queues.

Task pauses compare byte-exact like queue pauses (see 0004).
"""

from __future__ import annotations

import importlib
from typing import Any

import django.utils.timezone
from django.db import migrations, models

# A module name that starts with a digit: imported by name.
_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")


def _byte_exact(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(
        schema_editor.connection, [("robust_queue_task_pause", "task_path")]
    )


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0006_statistics'),
    ]

    operations = [
        migrations.CreateModel(
            name='TaskPause',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('task_path', models.CharField(max_length=255, unique=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'db_table': 'robust_queue_task_pause',
                'permissions': [('pause_task', 'Can pause and resume tasks')],
                'default_permissions': ('view',),
            },
        ),
        migrations.AlterModelOptions(
            name='recurringtask',
            options={'permissions': [('toggle_recurringtask', 'Can enable and disable recurring tasks')]},
        ),
        migrations.AddField(
            model_name='recurringtask',
            name='enabled',
            field=models.BooleanField(default=True),
        ),
        migrations.RunPython(_byte_exact, migrations.RunPython.noop, elidable=False),
    ]
