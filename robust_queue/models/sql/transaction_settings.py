"""A PostgreSQL setting for every transaction of a block, never the session.

``SET`` (or ``set_config(..., false)``) changes the session; behind a
pooler in transaction mode that session is handed to other clients (the
web app's too) after the transaction, with the setting still on it, and
this client's next transaction may run on a session without it. So the
setting is made with ``set_config(..., true)`` (``SET LOCAL``) at the
start of each statement's transaction: inside ``atomic()`` before each
statement, in autocommit as part of a transaction around that statement.
A few more round trips; the supervisor's maintenance is its only user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

_SET_LOCAL = "SELECT set_config(%s, %s, true)"


@contextmanager
def setting_per_transaction(
    connection: BaseDatabaseWrapper, name: str, value: str
) -> Iterator[None]:
    """Every statement run on ``connection`` inside sees ``name`` set to
    ``value``, in its own transaction only."""

    def execute(
        run: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        if connection.needs_rollback:
            # Django raises its own error for the broken transaction.
            return run(sql, params, many, context)
        if not connection.get_autocommit():
            _set_local(connection, context, name, value)
            return run(sql, params, many, context)
        with transaction.atomic(using=connection.alias):
            _set_local(connection, context, name, value)
            return run(sql, params, many, context)

    with connection.execute_wrapper(execute):
        yield


def _set_local(
    connection: BaseDatabaseWrapper, context: dict[str, Any], name: str, value: str
) -> None:
    # The driver's cursor: through Django's it would come back here.
    with connection.wrap_database_errors:
        context["cursor"].cursor.execute(_SET_LOCAL, [name, value])
