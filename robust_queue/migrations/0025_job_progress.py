"""A running job's progress, and whether someone waits for its end.

Both are added without a table rewrite: a nullable column, and a column
with a constant default (PostgreSQL >= 11, MariaDB's instant ADD COLUMN,
SQLite's ALTER TABLE ADD COLUMN). ``awaited``'s default is the database's
too: workers of the previous release, still running during a rolling
deploy, insert jobs without it (as 0021).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0024_failure_search")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="progress",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="awaited",
            field=models.BooleanField(default=False, db_default=False),
        ),
    ]
