"""Batches (``models/batch.py``): one row per batch, one per member job.
The public batch id compares byte-exact on MySQL/MariaDB."""

import importlib
from typing import Any

import django.db.models.deletion
import django.utils.timezone
import robust_queue.models.batch
from django.db import migrations, models


_collation = importlib.import_module("robust_queue.migrations.0004_binary_collation")

COLUMNS = (("robust_queue_batch", "batch_id"),)


def _forwards(apps: Any, schema_editor: Any) -> None:
    _collation.apply_binary_collation(schema_editor.connection, COLUMNS)


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0018_job_dependencies'),
    ]

    operations = [
        migrations.CreateModel(
            name='Batch',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('batch_id', models.CharField(default=robust_queue.models.batch.new_batch_id, max_length=64, unique=True)),
                ('backend_alias', models.CharField(max_length=64)),
                ('description', models.CharField(blank=True, default='', max_length=255)),
                ('properties', models.JSONField(blank=True, default=dict)),
                ('on_success', models.CharField(blank=True, default='', max_length=255)),
                ('on_failure', models.CharField(blank=True, default='', max_length=255)),
                ('on_finish', models.CharField(blank=True, default='', max_length=255)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('sealed_at', models.DateTimeField(blank=True, null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('total', models.IntegerField(default=0)),
                ('succeeded', models.IntegerField(default=0)),
                ('failed', models.IntegerField(default=0)),
            ],
            options={
                'verbose_name_plural': 'batches',
                'db_table': 'robust_queue_batch',
                'default_permissions': ('view',),
                'indexes': [models.Index(fields=['completed_at', 'sealed_at'], name='rq_batch_open')],
            },
        ),
        migrations.CreateModel(
            name='BatchMember',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('failed', models.BooleanField(default=False)),
                ('batch', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='members', to='robust_queue.batch')),
                ('job', models.OneToOneField(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='batch_member', to='robust_queue.job')),
            ],
            options={
                'db_table': 'robust_queue_batch_member',
                'default_permissions': (),
            },
        ),
        migrations.RunPython(_forwards, migrations.RunPython.noop, elidable=False),
    ]
