"""The database server's part of ``robust_queue health``: dead rows in the
queue tables, and the oldest open transaction that keeps them.

Every job inserts and deletes rows. PostgreSQL's vacuum (InnoDB's purge)
removes the old versions, but none that an open transaction may still
read: a report, a migration or a forgotten ``psql`` session left open for
minutes lets them pile up, and each claim then steps over them. Two checks
report it: ``dead_tuples`` (PostgreSQL: dead rows per live row of each
Robust Queue table, from ``pg_stat_user_tables``; MySQL/MariaDB: not
applicable, InnoDB purges deleted rows itself, and its backlog, the history
list length, is shown with the transactions) and ``transactions`` (the age
of the oldest open transaction on the server). Each warns above its
setting (``health_dead_tuple_ratio``, ``health_transaction_age``) and
fails above the command's ``--max-dead-tuple-ratio`` /
``--max-transaction-age``. SQLite: not applicable. The SQL is each
dialect's (``models/sql/server_state.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import DatabaseError, connections

from .. import conf
from ..models.sql import dialect_for
from ..models.sql.server_state import DeadRows, OpenTransaction

# A table with fewer dead rows never counts, whatever its ratio: a queue
# table holding a handful of live rows has more dead ones between two
# autovacuum runs, and that is its normal state.
MIN_DEAD_ROWS = 10_000


def queue_tables() -> list[str]:
    """The tables of Robust Queue's models."""
    models = apps.get_app_config("robust_queue").get_models()
    return sorted({model._meta.db_table for model in models if model._meta.managed})


@dataclass(slots=True)
class Upkeep:
    """The checks (name, ok, detail), the warnings, and what was read (the
    ``table_health`` of ``health --json``)."""

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(
        default_factory=lambda: {
            "dead_tuples": None,
            "oldest_transaction": None,
            "history_list_length": None,
        }
    )

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append((name, ok, detail))


def check(using: str, max_ratio: float | None, max_age: float | None) -> Upkeep:
    """The ``dead_tuples`` and ``transactions`` checks of ``using``'s
    server: failed above ``max_ratio`` / ``max_age``, warned above the
    settings."""
    report = Upkeep()
    data = report.data
    dialect = dialect_for(using)
    vendor = connections[using].display_name
    if not dialect.sees_transactions:
        for name in ("dead_tuples", "transactions"):
            report.add(name, True, f"not applicable ({vendor})")
        return report
    try:
        data["history_list_length"] = dialect.purge_backlog()
    except DatabaseError:
        pass
    _dead_tuples(report, using, data, max_ratio, vendor)
    _transactions(report, using, data, max_age)
    return report


def _dead_tuples(
    report: Upkeep, using: str, data: dict[str, Any], limit: float | None, vendor: str
) -> None:
    try:
        rows = dialect_for(using).dead_rows(queue_tables())
    except DatabaseError as exc:
        report.add("dead_tuples", True, f"cannot read the tables' statistics: {exc}")
        return
    if rows is None:
        length = data["history_list_length"]
        backlog = "" if length is None else f"; history list length {length:,}"
        report.add(
            "dead_tuples",
            True,
            f"not applicable ({vendor}: InnoDB purges deleted rows itself{backlog})",
        )
        return
    data["dead_tuples"] = [
        {"table": r.table, "live": r.live, "dead": r.dead, "ratio": round(r.ratio, 3)} for r in rows
    ]
    counted = sorted((r for r in rows if r.dead >= MIN_DEAD_ROWS), key=lambda r: -r.ratio)
    over = [r for r in counted if limit is not None and r.ratio > limit]
    if over:
        report.add(
            "dead_tuples",
            False,
            f"more than {limit:g} dead rows per live row in: "
            + ", ".join(_rows(r) for r in over)
            + " (vacuum cannot keep up, or an open transaction holds it back)",
        )
    else:
        worst = max(rows, key=lambda r: r.dead, default=None)
        most = "no statistics yet" if worst is None else f"the most dead rows: {_rows(worst)}"
        bound = "" if limit is None else f"; none above {limit:g} dead rows per live row"
        report.add("dead_tuples", True, f"{most}{bound}")
    warn = conf.get(conf.HEALTH_DEAD_TUPLE_RATIO)
    for r in counted:
        if warn is not None and r.ratio > warn and r not in over:
            report.warnings.append(
                f"{_rows(r)}: more than {warn:g} dead rows per live row "
                "(health_dead_tuple_ratio); claims step over them until vacuum removes them"
            )


def _rows(rows: DeadRows) -> str:
    return f"{rows.table} {rows.dead:,} dead / {rows.live:,} live ({rows.ratio:.2f})"


def _transactions(report: Upkeep, using: str, data: dict[str, Any], limit: float | None) -> None:
    try:
        oldest = dialect_for(using).oldest_transaction()
    except DatabaseError as exc:
        report.add("transactions", True, f"cannot read the server's open transactions: {exc}")
        return
    length = data["history_list_length"]
    backlog = "" if length is None else f"; history list length {length:,}"
    if oldest is None:
        report.add("transactions", True, f"no other transaction is open{backlog}")
        return
    data["oldest_transaction"] = {
        "age_seconds": round(oldest.age, 1),
        "session": oldest.session,
        "database": oldest.database,
        "state": oldest.state,
        "query": oldest.query,
    }
    over = limit is not None and oldest.age > limit
    bound = f"more than {limit:g}s" if over else "the oldest"
    report.add("transactions", not over, f"{bound}: {_transaction(oldest)}{backlog}")
    warn = conf.get(conf.HEALTH_TRANSACTION_AGE)
    if warn is not None and oldest.age > warn and not over:
        report.warnings.append(
            f"{_transaction(oldest)}: open more than {warn:g}s (health_transaction_age); "
            "while it is open the queue tables' dead rows cannot be removed"
        )


def _transaction(oldest: OpenTransaction) -> str:
    where = f" in database {oldest.database!r}" if oldest.database else ""
    query = f": {oldest.query}" if oldest.query else ""
    return (
        f"transaction of session {oldest.session}{where} open {oldest.age:.0f}s "
        f"({oldest.state}{query})"
    )
