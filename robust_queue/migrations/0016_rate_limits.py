"""Rate limits: the job's rate key and one window row per key
(``models/rate_limit.py``); both keys compare byte-exact on MySQL/MariaDB."""

import importlib
from typing import Any

import django.utils.timezone
from django.db import migrations, models

_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

COLUMNS = (("robust_queue_job", "rate_key"), ("robust_queue_rate_limit", "key"))


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0015_job_tags'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='rate_key',
            field=models.CharField(blank=True, default='', max_length=255),
        ),
        migrations.CreateModel(
            name='RateLimit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=255, unique=True)),
                ('window_start', models.DateTimeField()),
                ('window_end', models.DateTimeField()),
                ('count', models.IntegerField(default=0)),
                ('next_release', models.DateTimeField(blank=True, null=True)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'db_table': 'robust_queue_rate_limit',
                'default_permissions': (),
                'indexes': [models.Index(fields=['next_release'], name='rq_rate_limit_release')],
            },
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
