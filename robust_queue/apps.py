from django.apps import AppConfig


class RobustQueueConfig(AppConfig):
    name = "robust_queue"
    verbose_name = "Robust Queue"
    default_auto_field = "django.db.models.BigAutoField"
