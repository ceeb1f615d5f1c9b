"""Where PostgreSQL's LISTEN connects: a worker's listener, ``wait_result``.

A LISTEN lasts as long as the session that sent it. Behind a pooler in
transaction mode (PgBouncer's ``pool_mode = transaction``) each of a
client's transactions runs on whichever server session is free, so a
LISTEN sent through it listens on a session that serves other clients the
moment the statement ends, and its notifications are lost. So, per
database alias:

- ``ROBUST_QUEUE["listen_database"]`` names a direct connection to the
  same PostgreSQL database (a ``DATABASES`` alias, or a libpq connection
  string): LISTEN goes there;
- else an alias listed in ``ROBUST_QUEUE["pooled_databases"]`` gets no
  LISTEN: idle workers poll, a waiter re-reads the job on its back-off;
- else LISTEN uses the alias's own connection settings.

Everything else Robust Queue sends keeps no state in the session between
transactions: no session settings (lock waits are ``SET LOCAL``,
``lock_wait.py``), no advisory locks, no temporary tables, no named
prepared statements (Django's ``prepare_threshold`` stays None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connections

from ... import conf


@dataclass(frozen=True, slots=True)
class ListenRoute:
    """How LISTEN reaches one database alias's server."""

    # psycopg.connect() keyword arguments; None: no LISTEN, poll.
    params: dict[str, Any] | None
    # The direct connection configured, as a log line names it; "" when
    # LISTEN uses the alias's own settings (or there is none).
    direct: str = ""

    @property
    def polls(self) -> bool:
        return self.params is None


def listen_route(alias: str) -> ListenRoute:
    """Where LISTEN for the ``alias`` database connects (module docstring)."""
    target = direct_target(alias)
    if target is not None and target in settings.DATABASES:
        return ListenRoute(connections[target].get_connection_params(), f"DATABASES[{target!r}]")
    if target is not None:
        return ListenRoute({"conninfo": target, "prepare_threshold": None}, _shown(target))
    if alias in conf.get(conf.POOLED_DATABASES):
        return ListenRoute(None)
    return ListenRoute(connections[alias].get_connection_params())


def direct_target(alias: str) -> str | None:
    """The alias or connection string ``listen_database`` names for the
    ``alias`` database: a string is the queue database's."""
    given = conf.get(conf.LISTEN_DATABASE)
    if isinstance(given, dict):
        return given.get(alias)
    return given if given is not None and alias == conf.queue_database() else None


def target_problems() -> list[str]:
    """What is wrong with ``pooled_databases`` and ``listen_database``
    beyond their shapes (``conf``): aliases that name no database, a
    direct alias that is not PostgreSQL, a pooled alias that lets Django
    keep server-side cursors across transactions."""
    databases = settings.DATABASES
    problems = [
        f'ROBUST_QUEUE["pooled_databases"] names {alias!r}, which is not in DATABASES.'
        for alias in conf.get(conf.POOLED_DATABASES)
        if alias not in databases
    ]
    for alias in conf.get(conf.POOLED_DATABASES):
        if alias in databases and not databases[alias].get("DISABLE_SERVER_SIDE_CURSORS"):
            problems.append(
                f'DATABASES[{alias!r}] is pooled (ROBUST_QUEUE["pooled_databases"]) but '
                "DISABLE_SERVER_SIDE_CURSORS is not True: a server-side cursor does not "
                "survive a transaction pooler."
            )
    return problems + _direct_problems(databases)


def _direct_problems(databases: dict[str, Any]) -> list[str]:
    given = conf.get(conf.LISTEN_DATABASE)
    named = given if isinstance(given, dict) else {}
    problems = [
        f'ROBUST_QUEUE["listen_database"] has a connection for {alias!r}, which is not '
        "in DATABASES."
        for alias in named
        if alias not in databases
    ]
    targets = list(named.values()) if isinstance(given, dict) else [given]
    for target in targets:
        if target is None or _is_conninfo(target):
            continue
        engine = str(databases.get(target, {}).get("ENGINE", ""))
        if target not in databases:
            problems.append(
                f'ROBUST_QUEUE["listen_database"] is {target!r}: neither a DATABASES alias '
                'nor a connection string ("host=... dbname=..." or "postgresql://...").'
            )
        elif not engine.endswith("postgresql"):
            problems.append(
                f'ROBUST_QUEUE["listen_database"] is {target!r}, a {engine} database: '
                "LISTEN needs PostgreSQL."
            )
    return problems


def _is_conninfo(target: str) -> bool:
    return "=" in target or "://" in target


def _shown(conninfo: str) -> str:
    """A connection string as a log line may show it: host, port and
    database, never a password."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - PostgreSQL only

    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:  # noqa: BLE001 - connecting reports it in full
        return "a connection string that does not parse"
    host = parts.get("host", "localhost")
    return f"{host}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"
