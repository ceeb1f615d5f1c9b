from django.apps import AppConfig


class RobustQueueConfig(AppConfig):
    name = "robust_queue"
    verbose_name = "Robust Queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks; they import models, which the app
        # registry allows only once it is ready.
        from . import checks  # noqa: F401, PLC0415
