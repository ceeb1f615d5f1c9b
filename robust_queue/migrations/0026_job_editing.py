"""Editing a waiting job (issue 29, section 5): its permission,
``robust_queue.edit_job``, which the admin's "Edit" page requires."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0025_job_progress")]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [
                    ("retry_job", "Can retry jobs"),
                    ("discard_job", "Can discard jobs"),
                    ("run_job_now", "Can run jobs now"),
                    ("pause_queue", "Can pause and resume queues"),
                    ("cancel_job", "Can cancel jobs"),
                    ("reschedule_job", "Can reschedule jobs"),
                    ("edit_job", "Can edit waiting jobs"),
                ]
            },
        ),
    ]
