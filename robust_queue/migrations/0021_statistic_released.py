"""A counter of claims given back to ready unfinished (a worker's stop).

With a database default: workers of the previous release, still running
during a rolling deploy, insert statistics rows without this column.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0020_drop_result_id_pattern_index")]

    operations = [
        migrations.AddField(
            model_name="statistic",
            name="released",
            field=models.BigIntegerField(default=0, db_default=0),
        ),
    ]
