from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured

from . import conf
from .masking import logs


class RobustQueueConfig(AppConfig):
    name = "robust_queue"
    verbose_name = "Robust Queue"
    default_auto_field = "django.db.models.BigAutoField"

    def import_models(self) -> None:
        # Before any app is ready: the admin's autodiscovery and Django's
        # own checks would otherwise fail first on a misspelt backend path,
        # with a long traceback that does not name the setting.
        problems = conf.misspelt_backends()
        if problems:
            raise ImproperlyConfigured(" ".join(problems))
        super().import_models()

    def ready(self) -> None:
        # Registers the system checks; they import models, which the app
        # registry allows only once it is ready.
        from . import checks  # noqa: F401, PLC0415

        # Failures are logged with their message and traceback (by the
        # Tasks framework too): secrets in them are masked.
        logs.install()
