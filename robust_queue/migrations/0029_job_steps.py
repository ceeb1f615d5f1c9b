"""Resumable steps (issue 29, section 1): a job's finished steps and the
checkpoint of the step it stopped in.

A nullable column: added without a table rewrite on every database, and
workers of the previous release, still running during a rolling deploy,
neither read nor write it.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0028_runtime_schedules")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="steps",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
