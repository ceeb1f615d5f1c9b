"""Settings for the demo and the test suite.

``ROBUST_QUEUE_TEST_DB`` picks the database: ``sqlite`` (default),
``postgresql`` or ``mariadb``. ``ROBUST_QUEUE_DB_SUFFIX`` keeps parallel
runs apart (under pytest it defaults to one of the run's own, inherited by
the run's subprocesses, so two runs in one checkout never share a test
database); ``ROBUST_QUEUE_DB_NAME`` points a subprocess at a test database,
and on PostgreSQL ``ROBUST_QUEUE_DB_PORT`` at another port for it (a
PgBouncer in transaction pooling, which then has the settings it needs).
"""

import os
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DB_VENDOR = os.environ.get("ROBUST_QUEUE_TEST_DB", "sqlite")
if "pytest" in sys.modules:
    os.environ.setdefault("ROBUST_QUEUE_DB_SUFFIX", f"_run{os.getpid()}")
SUFFIX = os.environ.get("ROBUST_QUEUE_DB_SUFFIX", "")
DATA_DIR = Path(os.environ.get("ROBUST_QUEUE_DATA_DIR", BASE_DIR / "var"))
DATA_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = "robust-queue-testproject-not-secret"
DEBUG = os.environ.get("ROBUST_QUEUE_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "testproject.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
STATIC_URL = "/static/"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "robust_queue",
    "testproject",
]
try:  # Django 5.2 runs the django-tasks backport.
    import django.tasks  # noqa: F401
except ImportError:
    INSTALLED_APPS.append("django_tasks")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]


def _database(name: str) -> dict:
    override = os.environ.get("ROBUST_QUEUE_DB_NAME") if name == "robust_queue" else None
    if DB_VENDOR == "postgresql":
        db_name = override or f"{name}{SUFFIX}"
        pooled_port = os.environ.get("ROBUST_QUEUE_DB_PORT") if name == "robust_queue" else None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": pooled_port or os.environ.get("PGPORT", "5432"),
            # The second database binds parameters on the server, so the
            # queue's own SQL is tested both ways.
            "OPTIONS": {"server_side_binding": name != "robust_queue"},
            "DISABLE_SERVER_SIDE_CURSORS": bool(pooled_port),
            "TEST": {"NAME": f"test_{name}{SUFFIX}"},
        }
    if DB_VENDOR == "mariadb":
        db_name = override or f"{name}{SUFFIX}"
        return {
            "ENGINE": "django.db.backends.mysql",
            "NAME": db_name,
            "USER": os.environ.get("MYSQL_USER", "root"),
            "PASSWORD": os.environ.get("MYSQL_PASSWORD", ""),
            "HOST": os.environ.get("MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("MYSQL_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4", "isolation_level": "read committed"},
            "TEST": {"NAME": f"test_{name}{SUFFIX}", "CHARSET": "utf8mb4"},
        }
    if DB_VENDOR != "sqlite":
        raise RuntimeError(f"ROBUST_QUEUE_TEST_DB={DB_VENDOR!r}: use sqlite, postgresql or mariadb")
    path = override or str(DATA_DIR / f"{name}{SUFFIX}.sqlite3")
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            # Seconds to wait for the write lock; a process test that holds
            # it on purpose shortens this for the supervisor it starts.
            "timeout": float(os.environ.get("ROBUST_QUEUE_SQLITE_TIMEOUT", "30")),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(DATA_DIR / f"test_{name}{SUFFIX}.sqlite3")},
    }


DATABASES = {
    "default": _database("robust_queue"),
    "queue": _database("robust_queue_second"),
}
# A subprocess pointed at a test database (process tests) gets only that one:
# the second test database may not exist, and MySQL's checks connect to all.
SUBPROCESS_OF_TESTS = bool(os.environ.get("ROBUST_QUEUE_DB_NAME"))
if SUBPROCESS_OF_TESTS:
    del DATABASES["queue"]

TASKS = {
    "default": {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "QUEUES": [],
        "OPTIONS": {},
    },
    "separate": {
        "BACKEND": "robust_queue.backend.RobustQueueBackend",
        "QUEUES": [],
        "OPTIONS": {"database": "queue"},
    },
}
if SUBPROCESS_OF_TESTS:
    del TASKS["separate"]
if os.environ.get("ROBUST_QUEUE_BACKEND_PATH"):
    # A mistyped backend path, for the test of its message.
    TASKS["default"]["BACKEND"] = os.environ["ROBUST_QUEUE_BACKEND_PATH"]

ROBUST_QUEUE: dict = {}
# The process tests start `manage.py robust_queue` with short intervals.
if os.environ.get("ROBUST_QUEUE_CONFIG_JSON"):
    import json

    ROBUST_QUEUE.update(json.loads(os.environ["ROBUST_QUEUE_CONFIG_JSON"]))

# ROBUST_QUEUE_NO_LOGGING=1: a project without LOGGING (tests of the defaults).
if not os.environ.get("ROBUST_QUEUE_NO_LOGGING"):
    LOGGING = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
        "loggers": {
            "robust_queue": {
                "handlers": ["console"],
                "level": os.environ.get("ROBUST_QUEUE_LOG_LEVEL", "INFO"),
            }
        },
    }
