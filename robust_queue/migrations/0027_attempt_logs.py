"""A job's own log per attempt (issue 29, section 6).

A nullable column: added without a table rewrite on every database, and
workers of the previous release, still running during a rolling deploy,
neither read nor write it.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0026_job_editing")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="attempt_logs",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
