"""Model instances from plain rows, as a raw query would make them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.sql import Query

M = TypeVar("M", bound=Model)

# Where a connection keeps its plans (one per model and column list).
PLANS = "_robust_queue_row_plans"


@dataclass(frozen=True, slots=True)
class _Plan:
    """How rows of some columns become instances: which positions feed
    which attribute, and the converters (JSON, datetimes) of each."""

    positions: tuple[int, ...]
    names: list[str]
    # (index into a reordered row, its converters, the column expression)
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]


def instances(
    model: type[M], using: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> list[M]:
    """``model`` instances of ``rows`` (``columns`` named by the database),
    each value converted from the database's type (JSON, datetimes).

    A worker claims a job at a time, so the plan (fields, positions,
    converters) is made once per connection and column list, not per
    claim: it is kept on the connection object, whose own operations the
    converters are bound to."""
    connection = connections[using]
    plans: dict[tuple[type[Model], tuple[str, ...]], _Plan] = connection.__dict__.setdefault(
        PLANS, {}
    )
    key = (model, tuple(columns))
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = _plan(model, connection, using, columns)
    result = []
    for row in rows:
        values = [row[p] for p in plan.positions]
        for index, converters, expression in plan.converters:
            value = values[index]
            for converter in converters:
                value = converter(value, expression, connection)
            values[index] = value
        result.append(model.from_db(using, plan.names, values))
    return result


def _plan(
    model: type[Model], connection: BaseDatabaseWrapper, using: str, columns: Sequence[str]
) -> _Plan:
    convert = connection.introspection.identifier_converter
    fields = [f for f in model._meta.concrete_fields if convert(f.column) in columns]
    compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection, using)
    found = compiler.get_converters([f.get_col(model._meta.db_table) for f in fields])
    return _Plan(
        positions=tuple(columns.index(convert(f.column)) for f in fields),
        names=[f.attname for f in fields],
        converters=tuple(
            (index, tuple(converters), expression)
            for index, (converters, expression) in found.items()
        ),
    )
