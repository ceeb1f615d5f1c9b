"""Snooze: a job's snooze count (retry policies leave snoozed runs out) and
the statistics counter of snoozed attempts."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('robust_queue', '0012_admin_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='snoozes',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='statistic',
            name='snoozed',
            field=models.BigIntegerField(default=0),
        ),
    ]
