"""The ``--database`` option of the management commands."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import connections

from .. import conf


def database_option(value: str | None) -> str:
    """The alias a command works on: ``--database``, else the queue's
    database. An alias that ``DATABASES`` does not name is a clear error,
    before anything is read or written."""
    using = value or conf.queue_database()
    if using not in connections.settings:
        known = ", ".join(sorted(connections.settings))
        raise CommandError(f"Unknown database {using!r}: DATABASES has {known}.")
    return using
