"""The transaction of a claim or a finish: all or nothing, few round trips.

Django's ``atomic()`` on MySQL/MariaDB switches the session out of
autocommit mode and back: ``SET autocommit=0``, the statements, ``COMMIT``,
``SET autocommit=1``. A claim of one job is five statements and a finish
two, run once per job, so those two extra round trips are a large share of
their cost. Outside any atomic block ``short_transaction`` sends ``START
TRANSACTION`` and ``COMMIT`` instead: the session stays in autocommit mode,
which is what Django believes it is in, and the statements in between are
one transaction all the same. Inside an atomic block (a caller's
transaction, a test case), on a connection with ``AUTOCOMMIT`` off and on
other databases it is ``atomic()``.

The body runs plain statements only: it must not open ``atomic()`` (that
would commit early) or register ``on_commit`` hooks (they would run at
once).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)


@contextmanager
def short_transaction(using: str) -> Iterator[None]:
    """Run the body in one transaction on the ``using`` database."""
    connection = connections[using]
    # START TRANSACTION would commit whatever a session that is not in
    # autocommit mode (AUTOCOMMIT=False, atomic()) has pending.
    if connection.vendor != "mysql" or not connection.get_autocommit():
        with transaction.atomic(using=using):
            yield
        return
    _execute(connection, "START TRANSACTION")
    try:
        yield
        _execute(connection, "COMMIT")
    except BaseException:
        _roll_back(connection)
        raise


def _execute(connection: BaseDatabaseWrapper, sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


def _roll_back(connection: BaseDatabaseWrapper) -> None:
    try:
        _execute(connection, "ROLLBACK")
    except Exception:
        # A session that cannot roll back may still hold the transaction
        # and its row locks; closing it makes the server roll back.
        logger.warning("ROLLBACK failed; closing the connection", exc_info=True)
        connection.close()
