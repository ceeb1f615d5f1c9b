"""SQL expressions the transitions need that Django does not ship."""

from __future__ import annotations

from typing import Any

from django.db import models


class JsonArrayAppend(models.Func):
    """A JSON array column with one string appended, computed by the database.

    Lets a claim record its worker id on many jobs in one UPDATE instead of
    one CASE branch per row.
    """

    output_field = models.JSONField()

    def __init__(self, column: str, value: str) -> None:
        super().__init__(models.F(column), models.Value(value, output_field=models.CharField()))

    def _parts(self, compiler: Any, connection: Any) -> tuple[str, str, list[Any]]:
        column, column_params = compiler.compile(self.source_expressions[0])
        value, value_params = compiler.compile(self.source_expressions[1])
        return column, value, [*column_params, *value_params]

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, list[Any]]:
        column, value, params = self._parts(compiler, connection)
        return f"json_insert({column}, '$[#]', {value})", params

    def as_mysql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, value, params = self._parts(compiler, connection)
        return f"JSON_ARRAY_APPEND({column}, '$', {value})", params

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, value, params = self._parts(compiler, connection)
        return f"({column} || jsonb_build_array(({value})::text))", params
