"""What a page's queries read, from PostgreSQL's own plans.

Every SELECT a page ran is explained with ``EXPLAIN (ANALYZE, FORMAT
JSON)``; each scan node's rows read are its returned rows plus the rows
its filter removed, times its loops. A page's figure is the most rows any
one node read, and the relation it read them from: a full scan of a big
table shows as ~1,000,000.

On MariaDB every SELECT is run with ``ANALYZE FORMAT=JSON``: a table's
rows read are its ``r_rows`` (rows read a loop) times its ``r_loops``, and
its "node" the access type (``ALL`` is a full scan, ``index`` a full
index scan, ``range``/``ref``/``eq_ref`` index reads) and the key used.
"""

from __future__ import annotations

import json
import re
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
    if connection.vendor == "mysql":
        return _mariadb_text_plan(sql)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def figures(sql: str) -> PlanFigures:
    if connection.vendor == "mysql":
        return _mariadb_figures(sql)
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


def _mariadb_figures(sql: str) -> PlanFigures:
    """``figures`` from MariaDB's ``ANALYZE FORMAT=JSON`` (the query is run)."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE FORMAT=JSON {sql}")
        (raw,) = cursor.fetchone()
    worst = PlanFigures(sql=sql)
    for table in _tables(_mariadb_json(raw)):
        read = int(float(table.get("r_rows") or 0) * float(table.get("r_loops") or 0))
        access = str(table.get("access_type", ""))
        node = f"{access} {table['key']}" if table.get("key") else access
        if access == "ALL" and read > 1000:
            worst.seq_scans.add(str(table["table_name"]))
        if read > worst.rows_read:
            worst.rows_read, worst.relation, worst.node = read, str(table["table_name"]), node
    return worst


def _mariadb_json(raw: str) -> Any:
    """MariaDB's JSON plan; 10.11 writes a condition's quotes unescaped
    (``json_extract(error, '$."exception_class_path"')``): each one-line
    string value is quoted again if the text does not parse."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        line = re.compile(r'^(\s*"[^"]+": )"(.*)"(,?)\s*$')
        fixed = [
            (f"{m[1]}{json.dumps(m[2])}{m[3]}" if (m := line.match(text)) else text)
            for text in raw.splitlines()
        ]
        return json.loads("\n".join(fixed))


def _mariadb_text_plan(sql: str) -> str:
    """MariaDB's tabular ``ANALYZE`` of ``sql``: estimated and actual rows."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {sql}")
        header = "\t".join(column[0] for column in cursor.description)
        return "\n".join([header, *("\t".join(map(str, row)) for row in cursor.fetchall())])


def _tables(node: Any) -> list[dict[str, Any]]:
    """Every table access in a MariaDB JSON plan, at any depth."""
    found = []
    if isinstance(node, dict):
        if "table_name" in node:
            found.append(node)
        for value in node.values():
            found += _tables(value)
    elif isinstance(node, list):
        for value in node:
            found += _tables(value)
    return found
