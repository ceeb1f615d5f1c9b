"""A JSON key read as text that always decodes, whatever the row holds."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Func, TextField
from django.db.models.expressions import Expression
from django.db.models.fields.json import KeyTextTransform
from django.db.models.sql.compiler import SQLCompiler


class KeyText(Func):
    """``KeyTextTransform(key, field)``; on SQLite read as bytes and decoded leniently.

    SQLite's ``json_extract`` turns an escaped lone surrogate (valid JSON)
    into bytes that are not UTF-8, which Python's driver refuses to decode:
    one such row would break the whole page.
    """

    template = "%(expressions)s"
    output_field = TextField()

    def __init__(self, key: str, field: str) -> None:
        super().__init__(KeyTextTransform(key, field))

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> Any:
        return self.as_sql(compiler, connection, template="CAST(%(expressions)s AS BLOB)", **extra)

    def get_db_converters(self, connection: BaseDatabaseWrapper) -> list[Any]:
        return [_decode, *super().get_db_converters(connection)]


def _decode(value: Any, expression: Expression, connection: BaseDatabaseWrapper) -> Any:
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return value
