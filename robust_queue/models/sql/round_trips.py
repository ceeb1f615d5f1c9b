"""Several statements in one text: one round trip (MySQL/MariaDB).

MySQL and MariaDB have no data-modifying CTEs, so a claim is five
statements or more and a finish two, each a round trip of its own, plus
``START TRANSACTION`` and ``COMMIT``. mysqlclient sends a text of several
statements (its ``multi_statements``, on by default) and the server runs
them in order, stopping at the first error; the results come back one set
per statement. The statements, locks and commits are the same as one at a
time: only the waiting between them goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from django.db import IntegrityError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper

from .statements import Statement

BEGIN: Statement = ("START TRANSACTION", [])
COMMIT: Statement = ("COMMIT", [])


@dataclass(frozen=True, slots=True)
class Sent:
    """What one statement of a text gave back."""

    rowcount: int
    rows: tuple[tuple[Any, ...], ...]
    columns: list[str]


def send(connection: BaseDatabaseWrapper, statements: Sequence[Statement]) -> list[Sent]:
    """Run ``statements`` as one text: each one's outcome, in order.

    An error in any of them is raised (wrapped by Django, as a single
    statement's would be) once the ones before it have run; nothing after it
    runs. Every result is read before returning, so the session is ready
    for its next statement.
    """
    sql = "; ".join(text for text, _ in statements)
    params = [value for _, values in statements for value in values]
    outcomes = []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        # The results are read from the driver's own cursor: through
        # Django's two wrappers each read is an attribute look-up and an
        # error-wrapping call more (four reads per statement, a dozen
        # statements per job); errors are wrapped here once instead.
        codes = getattr(cursor.cursor, "codes_for_integrityerror", ())
        results = getattr(cursor.cursor, "cursor", cursor)
        with connection.wrap_database_errors:
            while True:
                columns = [column[0] for column in results.description or ()]
                rows = tuple(results.fetchall())
                outcomes.append(Sent(cast(int, results.rowcount), rows, columns))
                if not _next_result(connection, results, codes):
                    return outcomes


def _next_result(connection: BaseDatabaseWrapper, results: Any, codes: Any) -> bool:
    try:
        with connection.wrap_database_errors:
            return bool(results.nextset())
    except OperationalError as exc:
        # As Django's MySQL cursor does for the first statement's error (a
        # NULL or a CHECK refused): an IntegrityError, not a passing outage.
        if exc.args and exc.args[0] in codes:
            raise IntegrityError(*exc.args) from exc
        raise
