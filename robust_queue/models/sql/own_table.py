"""A job query's rows read from the one execution table its filter names.

A state's list is the job table joined one to one with that state's table
(``failed_execution``, ``ready_execution``, ...). When every condition of
the query is on that table, the jobs it holds are that table's rows that
meet them: each row has exactly one job (``job_id`` is a unique foreign
key), so the job table need not be read. Counting through the join costs a
lookup in the job table's primary key per row, which on MariaDB is a read
of the job's row itself: 10,000 failures of one exception class took
0.7 s at 10M jobs, 500,000 failures 3 s; from the failed table's indexes
alone, milliseconds (BENCHMARKS.md, "Admin at 10M jobs on MariaDB").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import EmptyResultSet, FieldDoesNotExist, FullResultSet
from django.db import connections
from django.db.models import Exists, QuerySet, Subquery
from django.db.models.expressions import Col, RawSQL, ResolvedOuterRef
from django.db.models.sql.constants import INNER
from django.db.models.sql.datastructures import Join
from django.db.models.sql.query import Query

from ..job_state import EXECUTION_ACCESSORS


def rows_sql(queryset: QuerySet[Any], job_id: bool = False) -> tuple[str, list[Any]] | None:
    """``SELECT 1 FROM <execution table> WHERE ...`` with exactly the rows
    of ``queryset`` (a job query), or None when its filter reads anything
    but one execution table joined one to one (or nothing). ``job_id``:
    select each row's job id (as ``rq_job_id``) instead of 1, which an
    index-only count may not have."""
    query: Any = queryset.query
    if query.combinator or query.distinct or query.group_by is not None or query.is_sliced:
        return None
    nodes = list(_nodes(query.where))
    if any(_foreign(node, query.model._meta.db_table) for node in nodes):
        return None
    aliases = {node.alias for node in nodes if isinstance(node, Col)}
    if len(aliases) != 1:
        return None
    (alias,) = aliases
    join = query.alias_map.get(alias)
    if not isinstance(join, Join) or not _one_to_one_execution(join, query):
        return None
    in_use = {name for name, count in query.alias_refcount.items() if count}
    if in_use - {alias, query.base_table}:
        return None
    connection = connections[queryset.db]
    compiler = query.get_compiler(connection=connection)
    try:
        where, params = compiler.compile(query.where)
    except (EmptyResultSet, FullResultSet):
        return None  # the query itself knows these
    table = connection.ops.quote_name(join.table_name)
    named = "" if alias == join.table_name else f" {connection.ops.quote_name(alias)}"
    selected = "1"
    if job_id:
        selected = (
            f"{connection.ops.quote_name(alias)}.{connection.ops.quote_name('job_id')} AS rq_job_id"
        )
    return f"SELECT {selected} FROM {table}{named} WHERE {where}", list(params)


def _nodes(node: Any) -> Iterator[Any]:
    """``node`` and every condition and expression under it."""
    yield node
    children = getattr(node, "children", None)
    if children is None and hasattr(node, "get_source_expressions"):
        children = node.get_source_expressions()
    for child in children or ():
        if child is not None:
            yield from _nodes(child)


def _foreign(node: Any, job_table: str) -> bool:
    """A condition this module cannot move off the job query: a subquery
    (it may name the job row), or raw SQL that names the job table."""
    if isinstance(node, (Exists, Subquery, ResolvedOuterRef, Query)):
        return True
    return isinstance(node, RawSQL) and job_table in node.sql


def _one_to_one_execution(join: Join, query: Any) -> bool:
    if join.join_type != INNER:
        return False
    if join.parent_alias != query.base_table:
        return False
    try:
        tables = {
            query.model._meta.get_field(accessor).related_model._meta.db_table
            for accessor in EXECUTION_ACCESSORS.values()
        }
    except FieldDoesNotExist:
        return False  # not a job query
    return join.table_name in tables and join.join_cols == (("id", "job_id"),)
