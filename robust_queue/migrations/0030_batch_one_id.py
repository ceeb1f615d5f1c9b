"""One public id for a batch: ``batch.id`` is ``batch.batch_id``.

The row's auto key is renamed ``row_id`` in the model's state only: its
column stays ``id`` (nothing is written to the database, so workers of
the previous release go on reading and writing batches during a rolling
deploy), and the model's ``id`` is a property returning ``batch_id``.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0029_job_steps")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField(model_name="batch", old_name="id", new_name="row_id"),
                migrations.AlterField(
                    model_name="batch",
                    name="row_id",
                    field=models.BigAutoField(db_column="id", primary_key=True, serialize=False),
                ),
            ],
        ),
    ]
