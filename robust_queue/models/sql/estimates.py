"""The planner's row estimate of a query, where the database gives one.

PostgreSQL: the top row estimate of ``EXPLAIN`` (no execution): from the
table's statistics (``pg_class.reltuples`` scaled to its current size, and
the columns' histograms for a filter). MariaDB's and SQLite's estimates are
too rough to show (InnoDB's are off by half and more): None there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connections


def estimated_rows(using: str, sql: str, params: Sequence[Any]) -> int | None:
    """How many rows the planner expects ``sql`` to return; None where the
    database gives no estimate worth showing."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return None
    # Bound on the client: EXPLAIN takes no server-side parameters.
    ops: Any = connection.ops  # PostgreSQL's own
    statement = ops.compose_sql(sql, params)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}")
        (raw,) = cursor.fetchone()
    plan = raw if isinstance(raw, list) else json.loads(raw)
    return int(plan[0]["Plan"]["Plan Rows"])
