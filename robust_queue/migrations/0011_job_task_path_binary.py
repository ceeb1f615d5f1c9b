"""A job's task path compares byte-exact on MySQL/MariaDB too (see 0004).

``robust_queue prune --task``, ``retry-failed --task``, retention by task
and the admin's task filter compare it with ``=``: under the default
collation ``shop.tasks.Send`` also matched the jobs of ``shop.tasks.send``
(and deleted them, for prune). Task paths are Python names: case matters.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

COLUMNS = (("robust_queue_job", "task_path"),)


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):
    dependencies = [
        ("robust_queue", "0010_job_metadata"),
    ]

    # Reversing keeps the binary collation (as 0004 does).
    operations = [
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
