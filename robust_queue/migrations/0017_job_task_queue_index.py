"""The task path index becomes (task_path, queue_name, id): the job list
filtered by task, or by task and queue, reads its page newest first from
the index instead of walking the primary key past every other job. Its
prefix serves everything the old index did; added before the old one is
dropped, so no moment is without one."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0016_rate_limits'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['task_path', 'queue_name', 'id'], name='rq_job_task_queue'),
        ),
        migrations.RemoveIndex(
            model_name='job',
            name='rq_job_task_path',
        ),
    ]
