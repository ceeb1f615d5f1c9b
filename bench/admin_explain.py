"""What a page's queries read, from PostgreSQL's own plans.

Every SELECT a page ran is explained with ``EXPLAIN (ANALYZE, FORMAT
JSON)``; each scan node's rows read are its returned rows plus the rows
its filter removed, times its loops. A page's figure is the most rows any
one node read, and the relation it read them from: a full scan of a big
table shows as ~1,000,000.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

SCAN_NODES = ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Bitmap Index Scan")


@dataclass
class PlanFigures:
    """The worst node of one query (or of all the queries of a page)."""

    rows_read: int = 0
    relation: str = ""
    node: str = ""
    sql: str = ""
    seq_scans: set[str] = field(default_factory=set)

    def worse(self, other: PlanFigures) -> PlanFigures:
        worst = other if other.rows_read > self.rows_read else self
        worst.seq_scans = self.seq_scans | other.seq_scans
        return worst

    @property
    def shown(self) -> str:
        where = f" ({self.node} on {self.relation})" if self.relation else ""
        return f"{self.rows_read:,}{where}"


def explain(sql: str) -> dict[str, Any]:
    """The JSON plan of ``sql``, executed (ANALYZE) in a rolled-back block."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
        (raw,) = cursor.fetchone()
    plan = raw if isinstance(raw, list) else json.loads(raw)
    return dict(plan[0])


def text_plan(sql: str) -> str:
    """The readable plan of ``sql`` (actual rows, no timings)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def figures(sql: str) -> PlanFigures:
    plan = explain(sql)
    worst = PlanFigures(sql=sql)
    for node in _nodes(plan["Plan"]):
        if node["Node Type"] not in SCAN_NODES:
            continue
        read = _rows_read(node)
        relation = node.get("Relation Name") or node.get("Index Name", "")
        if node["Node Type"] == "Seq Scan" and read > 1000:
            worst.seq_scans.add(relation)
        if read > worst.rows_read:
            worst.rows_read, worst.relation, worst.node = read, relation, node["Node Type"]
    return worst


def page_figures(queries: list[dict[str, str]]) -> PlanFigures:
    """The worst node over the SELECTs of one page."""
    worst = PlanFigures()
    for query in queries:
        sql = query["sql"]
        if not sql.lstrip().upper().startswith("SELECT"):
            continue
        worst = worst.worse(figures(sql))
    return worst


def _rows_read(node: dict[str, Any]) -> int:
    loops = int(node.get("Actual Loops", 1) or 1)
    rows = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
    rows += node.get("Rows Removed by Index Recheck", 0)
    return int(rows * loops)


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found += _nodes(child)
    return found
