"""Field values as an enqueue's statement sends them, without the ORM's
per-call dispatch.

``adapter(field, connection)`` is a function of one value giving what
``field.get_db_prep_save(value, connection)`` gives: for the values an
enqueue writes (text, integers, aware datetimes, plain JSON, None) by the
one backend call that method ends in, for anything else by calling it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field

Adapter = Callable[[Any], Any]

TEXT_KINDS = frozenset({"CharField", "TextField"})
INTEGER_KINDS = frozenset(
    {
        "IntegerField",
        "SmallIntegerField",
        "BigIntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "PositiveBigIntegerField",
    }
)
# What JSON decodes to: a value of another type (an expression, a lazy
# string) takes the ORM's path.
_PLAIN_JSON = {dict, list, str, int, float, bool}


def adapter(field: Field[Any, Any], connection: BaseDatabaseWrapper) -> Adapter:
    ops = connection.ops

    def orm(value: Any) -> Any:
        return field.get_db_prep_save(value, connection)

    kind = field.get_internal_type()
    if kind in TEXT_KINDS:
        return lambda value: value if value is None or type(value) is str else orm(value)
    if kind in INTEGER_KINDS:
        return lambda value: (
            ops.adapt_integerfield_value(value, kind) if type(value) is int else orm(value)
        )
    if kind == "DateTimeField":
        # A naive one takes the ORM's path: it warns and makes it aware.
        return lambda value: (
            ops.adapt_datetimefield_value(value)
            if value is None or (type(value) is datetime and value.tzinfo is not None)
            else orm(value)
        )
    if kind == "JSONField":
        encoder = field.encoder  # type: ignore[attr-defined]
        # Most jobs' lists and dicts (errors, worker ids, metadata) are
        # empty: adapted once here, not encoded again for every job.
        empty: dict[type, Any] = {
            list: ops.adapt_json_value([], encoder),
            dict: ops.adapt_json_value({}, encoder),
        }

        def adapt_json(value: Any) -> Any:
            value_type = type(value)
            if value is None:
                return None
            if value_type not in _PLAIN_JSON:
                return orm(value)
            if not value and value_type in empty:
                return empty[value_type]
            return ops.adapt_json_value(value, encoder)

        return adapt_json
    return orm
