from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("robust_queue", "0007_recurring_enabled_task_pause"),
    ]

    operations = [
        migrations.AddField(
            model_name="claimedexecution",
            name="cancel_requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterModelOptions(
            name="job",
            options={
                "permissions": [
                    ("retry_job", "Can retry jobs"),
                    ("discard_job", "Can discard jobs"),
                    ("run_job_now", "Can run jobs now"),
                    ("pause_queue", "Can pause and resume queues"),
                    ("cancel_job", "Can cancel jobs"),
                ]
            },
        ),
    ]
