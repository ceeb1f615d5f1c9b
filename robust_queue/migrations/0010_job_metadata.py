from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("robust_queue", "0009_queue_caps"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="metadata",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
