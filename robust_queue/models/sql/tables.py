"""The quoted names of the tables the dialects write, looked up once.

Looked up in the app registry: the models import this package, never the
other way round.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.apps import apps
from django.db.backends.base.base import BaseDatabaseWrapper

# Attribute of ``Tables``: model of ``robust_queue``.
_MODELS = {
    "ready": "ReadyExecution",
    "claimed": "ClaimedExecution",
    "job": "Job",
    "task_pause": "TaskPause",
    "queue_cap": "QueueCap",
    "pause": "Pause",
}


@dataclass(frozen=True, slots=True)
class Tables:
    ready: str
    claimed: str
    job: str
    task_pause: str
    queue_cap: str
    pause: str


def tables_of(connection: BaseDatabaseWrapper) -> Tables:
    """The tables' names, quoted for ``connection``."""
    quote = connection.ops.quote_name
    names = {
        attribute: quote(apps.get_model("robust_queue", model)._meta.db_table)
        for attribute, model in _MODELS.items()
    }
    return Tables(**names)
