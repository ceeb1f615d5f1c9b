"""Settings for benchmarks beside a peer: the test project plus
django-tasks-db 0.13 as the ``peer`` backend (``bench.peer_enqueue``).

The peer is not a dependency of Robust Queue; install it in a venv of its
own: ``pip install -e ".[postgres,mysql,backport]" django-tasks-db==0.13.0``.
"""

from testproject.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]  # noqa: F405
# "held": where bench.peer_drain enqueues before its workers are up.
TASKS = {
    **TASKS,  # noqa: F405
    "peer": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default", "held"]},
}
ROBUST_QUEUE = {**ROBUST_QUEUE, "task_modules": ["bench.peer_tasks"]}  # noqa: F405
# The peer's worker closes the connection after every job unless it may
# keep it (close_old_connections): give it persistent connections, as a
# production deployment would. Robust Queue's workers keep theirs anyway.
DATABASES = {alias: {**db, "CONN_MAX_AGE": None} for alias, db in DATABASES.items()}  # noqa: F405
