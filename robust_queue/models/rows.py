"""Model instances from plain rows, as a raw query would make them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from django.db import connections
from django.db.models import Model
from django.db.models.sql import Query

M = TypeVar("M", bound=Model)


def instances(
    model: type[M], using: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> list[M]:
    """``model`` instances of ``rows`` (``columns`` named by the database),
    each value converted from the database's type (JSON, datetimes)."""
    connection = connections[using]
    convert = connection.introspection.identifier_converter
    fields = [f for f in model._meta.concrete_fields if convert(f.column) in columns]
    positions = [columns.index(convert(f.column)) for f in fields]
    names = [f.attname for f in fields]
    compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection, using)
    converters = compiler.get_converters([f.get_col(model._meta.db_table) for f in fields])
    values: Iterable[Sequence[Any]] = ([row[p] for p in positions] for row in rows)
    if converters:
        values = compiler.apply_converters(values, converters)
    return [model.from_db(using, names, list(row)) for row in values]
