"""A project that runs Robust Queue without the admin: no
``django.contrib.admin``, ``auth``, ``sessions`` or ``messages``, as a
worker-only or API-only deployment has. The suite runs every command and a
real supervisor under it (``tests/processes/test_no_admin.py``).

The databases are ``testproject``'s (``ROBUST_QUEUE_TEST_DB``,
``ROBUST_QUEUE_DB_NAME``): the suite points this project at the test
database it made.
"""

import os

from testproject.settings import DATA_DIR, _database

SECRET_KEY = "robust-queue-noadmin-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "testproject_noadmin.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = ["robust_queue", "testproject_noadmin"]
try:  # Django 5.2 runs the django-tasks backport.
    import django.tasks  # noqa: F401
except ImportError:
    INSTALLED_APPS.append("django_tasks")

DATABASES = {"default": _database("robust_queue")}
TASKS = {"default": {"BACKEND": "robust_queue.backend.RobustQueueBackend"}}
ROBUST_QUEUE: dict = {}
if os.environ.get("ROBUST_QUEUE_CONFIG_JSON"):
    import json

    ROBUST_QUEUE.update(json.loads(os.environ["ROBUST_QUEUE_CONFIG_JSON"]))
if os.environ.get("ROBUST_QUEUE_BACKEND_PATH"):
    # A mistyped backend path, for the test of its message.
    TASKS["default"]["BACKEND"] = os.environ["ROBUST_QUEUE_BACKEND_PATH"]
__all__ = ["DATA_DIR"]
