"""The database's clock: the one clock every process compares against.

Rows are written by processes on many hosts whose clocks disagree. Any
time that another host compares against (heartbeats, due times, lease
expiry, recurring slots, retention cutoffs) is taken from the database,
inside the statement where possible (``DatabaseNow()``), or read once
with ``database_now()`` where Python needs the value.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models.functions import Now
from django.db.models.sql import Query
from django.utils import timezone


class DatabaseNow(Now):
    """Django's ``Now()``, in UTC on MySQL/MariaDB, in microseconds on SQLite.

    MySQL's ``CURRENT_TIMESTAMP`` is in the session's time zone, but Django
    stores aware datetimes there as UTC: ``UTC_TIMESTAMP(6)`` matches them
    whatever the server's time zone. SQLite runs inside this process, so
    its clock is this host's; its ``'now'`` keeps only milliseconds, which
    would put a time written a moment ago still in the future.
    """

    def as_mysql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        template = "UTC_TIMESTAMP(6)" if settings.USE_TZ else "CURRENT_TIMESTAMP(6)"
        return self.as_sql(compiler, connection, template=template, **extra_context)

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return "%s", [connection.ops.adapt_datetimefield_value(timezone.now())]


def database_now(using: str) -> datetime:
    """The database server's current time (aware when ``USE_TZ``)."""
    connection = connections[using]
    expression = DatabaseNow()
    sql, params = Query(None).get_compiler(connection=connection).compile(expression)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", list(params))
        value = cursor.fetchone()[0]
    converters = connection.ops.get_db_converters(expression)
    for converter in [*converters, *expression.get_db_converters(connection)]:
        value = converter(value, expression, connection)
    assert isinstance(value, datetime)
    return value
