"""A database router for keeping the queue in its own database.

Add ``"robust_queue.router.RobustQueueRouter"`` to ``DATABASE_ROUTERS`` and
set ``ROBUST_QUEUE["database"]`` (and the backend's ``OPTIONS["database"]``)
to the alias that should hold the queue tables.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model

from . import conf

APP_LABEL = "robust_queue"


class RobustQueueRouter:
    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        return conf.queue_database() if _ours(model) else None

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return conf.queue_database() if _ours(model) else None

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool | None:
        if _ours(type(obj1)) and _ours(type(obj2)):
            return True
        return None

    def allow_migrate(
        self, db: str, app_label: str, model_name: str | None = None, **hints: Any
    ) -> bool | None:
        if app_label == APP_LABEL:
            return db == conf.queue_database()
        return None


def _ours(model: type[Model]) -> bool:
    return model._meta.app_label == APP_LABEL
