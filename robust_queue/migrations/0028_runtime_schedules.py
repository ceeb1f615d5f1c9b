"""Recurring schedules edited at runtime (issue 27, section 2).

A runtime schedule (``static=False``) may run on an interval instead of a
cron string, and read its cron string in its own time zone. Both columns
are new and empty for existing rows (nullable, or "" in the database
itself), so schedulers of the previous release go on reading the table
while this one rolls out; neither is compared in a query, so neither
needs 0004's binary collation.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0027_attempt_logs")]

    operations = [
        migrations.AddField(
            model_name="recurringtask",
            name="interval",
            field=models.DurationField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="recurringtask",
            name="time_zone",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AlterField(
            model_name="recurringtask",
            name="schedule",
            field=models.CharField(blank=True, max_length=255),
        ),
    ]
