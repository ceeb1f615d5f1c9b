"""Searching every failure's error text through an index (migration 0024).

The text searched is a failure's exception class path, a space, and its
traceback (message included), as stored in ``failed_execution.error``.

- PostgreSQL: a trigram GIN index (``pg_trgm``) on that text serves
  ``ILIKE '%term%'`` for any term with three letters or digits in a row;
  substring semantics, case-insensitive. Without ``pg_trgm`` (creating the
  extension needs rights) there is no index and the admin falls back to
  the newest failures (``has_index`` says which).
- MariaDB/MySQL: a ``FULLTEXT`` index (InnoDB) on a stored generated
  column holding the same text unescaped (a ``FULLTEXT`` index on the JSON
  column itself would glue ``\\n`` to the next word). ``MATCH ... AGAINST``
  in boolean mode requires every word of the term (words of at least
  ``innodb_ft_min_token_size`` = 3 characters that are not InnoDB stop
  words); a ``LIKE`` on the same text then keeps the rows that contain the
  term as typed. A term with no such word cannot use the index. InnoDB
  indexes a row when its transaction commits: the newest failures are
  also read as typed (``error_contains``).
- SQLite: no index; the admin searches the newest failures only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.models import BooleanField, CharField, Expression, F, Q
from django.db.models.expressions import RawSQL

INDEX = "rq_failed_search"
CLASS_INDEX = "rq_failed_exception_id"
TABLE = "robust_queue_failed_execution"
# MariaDB/MySQL: the generated column the FULLTEXT index covers.
TEXT_COLUMN = "rq_error_text"
# The text PostgreSQL's index covers; a query must spell it the same way.
POSTGRESQL_TEXT = (
    "(COALESCE(({error} ->> 'exception_class_path'), '') || ' ' || "
    "COALESCE(({error} ->> 'traceback'), ''))"
)
# The same text spelled so that no index matches it: a query that walks a
# range of ids and reads each row's text (``ErrorContains(indexed=False)``).
POSTGRESQL_UNINDEXED_TEXT = (
    "(COALESCE(({error} ->> 'exception_class_path'), '') || (' ' || "
    "COALESCE(({error} ->> 'traceback'), '')))"
)
MYSQL_TEXT = (
    "CONCAT_WS(' ', JSON_UNQUOTE(JSON_EXTRACT({error}, '$.exception_class_path')), "
    "JSON_UNQUOTE(JSON_EXTRACT({error}, '$.traceback')))"
)
# InnoDB's default stop words (INFORMATION_SCHEMA.INNODB_FT_DEFAULT_STOPWORD)
# and shortest indexed word: MATCH finds no row for these.
INNODB_STOPWORDS = frozenset(
    "a about an are as at be by com de en for from how i in is it la of on or "
    "that the this to was what when where who will with und www".split()
)
INNODB_MIN_WORD = 3
_TRIGRAM = re.compile(r"[^\W_]{3}")
_WORD = re.compile(r"\w+")


def has_index(using: str) -> bool:
    """Whether this database holds the error-text index (0024 made it)."""
    return _index_exists(using, INDEX)


def has_class_index(using: str) -> bool:
    """Whether this database holds the (exception class, id) index."""
    return _index_exists(using, CLASS_INDEX)


def _index_exists(using: str, index: str) -> bool:
    connection = connections[using]
    if connection.vendor == "postgresql":
        sql = "SELECT 1 FROM pg_indexes WHERE tablename = %s AND indexname = %s"
    elif connection.vendor == "mysql":
        sql = (
            "SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() "
            "AND table_name = %s AND index_name = %s"
        )
    else:
        return False
    with connection.cursor() as cursor:
        cursor.execute(sql, [TABLE, index])
        return cursor.fetchone() is not None


def usable_term(vendor: str, term: str) -> bool:
    """Whether the index can find ``term`` (see the module docstring)."""
    if vendor == "postgresql":
        return _TRIGRAM.search(term) is not None
    if vendor == "mysql":
        return bool(_boolean_words(term))
    return False


def why_not(vendor: str) -> str:
    """Why a term the index cannot serve is searched among recent failures."""
    if vendor == "postgresql":
        return "a term needs three letters or digits in a row to use the index"
    if vendor == "mysql":
        return (
            f"a term needs a word of {INNODB_MIN_WORD} or more characters that is not "
            "a MariaDB full-text stop word to use the index"
        )
    return "SQLite has no index on the error text"


class _OnTheError(Expression):
    """An expression over one failed execution's ``error`` field
    (``error``: its path from the query's model,
    ``"failed_execution__error"``); ``self.error.alias`` is that table's
    alias in the query once resolved."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error: Any = F(error)

    def get_source_expressions(self) -> list[Any]:
        return [self.error]

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        (self.error,) = exprs

    def _table(self, connection: Any) -> str:
        return str(connection.ops.quote_name(self.error.alias))


class ErrorContains(_OnTheError):
    """True for rows whose failure's error text contains ``term``.
    ``error``: the path to the ``FailedExecution.error`` field
    (``"failed_execution__error"``). PostgreSQL: ``indexed=True`` spells
    the text as the trigram index does; ``indexed=False`` spells it so
    that the planner cannot read the index for it, for a walk along a
    range of ids that stops at its ``LIMIT`` (the planner's estimate of a
    match's frequency is a default: tracebacks are too wide for its
    statistics). MariaDB/MySQL: the generated column's text, read row by
    row (``error_contains`` reaches its ``FULLTEXT`` index)."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, error: str, term: str, indexed: bool = True) -> None:
        super().__init__(error)
        self.indexed = indexed
        self.term = term

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        raise NotImplementedError(f"No error-text index on {connection.vendor}")

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        error, params = compiler.compile(self.error)
        spelling = POSTGRESQL_TEXT if self.indexed else POSTGRESQL_UNINDEXED_TEXT
        text = spelling.format(error=error)
        return f"{text} ILIKE %s", [*params, *params, f"%{_like_escaped(self.term)}%"]

    def as_mysql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        return f"{self._table(connection)}.{TEXT_COLUMN} LIKE %s", [f"%{_like_escaped(self.term)}%"]


def error_contains(
    using: str, failure: str, term: str, newest_from: int = 0, indexed: bool = True
) -> Q:
    """The rows whose failure (``failure``: the path to the failed
    execution, ``"failed_execution"``) has ``term`` in its error text.

    ``indexed``: through the index (PostgreSQL's trigrams, MariaDB's
    ``FULLTEXT``); else each row's text is read (for a walk along a range
    of ids). MariaDB/MySQL through the index: the ids of the matching
    failures, a subquery the server joins as a semi-join (an expression
    would be compared with 1, which reads every row of the range). InnoDB
    adds a row to its full-text index when its transaction commits: the
    failures from id ``newest_from`` on are also read as typed, so that a
    failure is found from its own transaction on (and in tests)."""
    if not indexed or connections[using].vendor != "mysql":
        return Q(ErrorContains(f"{failure}__error", term, indexed=indexed))
    like = f"%{_like_escaped(term)}%"
    sql = (
        f"SELECT id FROM (SELECT id FROM {TABLE} WHERE "
        f"MATCH({TEXT_COLUMN}) AGAINST(%s IN BOOLEAN MODE) AND {TEXT_COLUMN} LIKE %s "
        f"UNION SELECT id FROM {TABLE} WHERE id >= %s AND {TEXT_COLUMN} LIKE %s) rq_found"
    )
    found = RawSQL(sql, [_boolean_query(term), like, newest_from, like])
    return Q(**{f"{failure}__pk__in": found})


# MariaDB/MySQL: the virtual column of the failure's exception class path
# (0024), cut to its first CLASS_LENGTH characters.
CLASS_COLUMN = "rq_exception_class"
CLASS_LENGTH = 255


class ExceptionClassColumn(_OnTheError):
    """MariaDB/MySQL: the failed execution's ``rq_exception_class`` column
    (``error``: the path to the ``FailedExecution.error`` field), which
    the ``(class, id)`` index covers. MariaDB does not match the JSON
    expression to the generated column (the failed list of one class read
    all 500,000 failures at 10M jobs: 5.3 s; by the column, 2 ms)."""

    output_field = CharField()

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        raise NotImplementedError(f"No exception class column on {connection.vendor}")

    def as_mysql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        return f"{self._table(connection)}.{CLASS_COLUMN}", []


def has_matches(using: str, term: str, count: int) -> bool:
    """Whether the index holds at least ``count`` candidates for ``term``,
    read in the index's order until ``count`` are found (no order to sort
    by). PostgreSQL: failures whose error text contains ``term``.
    MariaDB/MySQL: failures whose text holds every word of ``term`` (a
    candidate may not contain the term as typed)."""
    vendor = connections[using].vendor
    if vendor == "mysql":
        matching, params = (
            f"MATCH({TEXT_COLUMN}) AGAINST(%s IN BOOLEAN MODE)",
            [_boolean_query(term)],
        )
    else:
        text = POSTGRESQL_TEXT.format(error="error")
        matching, params = f"{text} ILIKE %s", [f"%{_like_escaped(term)}%"]
    sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM {TABLE} WHERE {matching} LIMIT %s) found"
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [*params, count])
        return int(cursor.fetchone()[0]) >= count


def _boolean_query(term: str) -> str:
    return " ".join(f"+{word}" for word in _boolean_words(term))


def _boolean_words(term: str) -> list[str]:
    words = (word.lower() for word in _WORD.findall(term))
    return [w for w in words if len(w) >= INNODB_MIN_WORD and w not in INNODB_STOPWORDS]


def _like_escaped(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# Failure groups: the exception classes through the (class, id) index.
_CLASS = {
    "postgresql": "(error ->> 'exception_class_path')",
    "mysql": CLASS_COLUMN,
}
_POSTGRESQL_CLASSES = f"""
WITH RECURSIVE classes(name) AS (
    (SELECT {_CLASS["postgresql"]} FROM {TABLE} ORDER BY 1 LIMIT 1)
    UNION ALL
    SELECT (SELECT {_CLASS["postgresql"]} FROM {TABLE}
            WHERE {_CLASS["postgresql"]} > classes.name ORDER BY 1 LIMIT 1)
    FROM classes WHERE classes.name IS NOT NULL
)
SELECT name FROM classes WHERE name IS NOT NULL LIMIT %s
"""
# MariaDB/MySQL: the next class after one, one index probe. The server has
# no loose index scan for this virtual column (DISTINCT read all 500,000
# index entries at 10M jobs: 130-290 ms) and reads its recursive CTE's
# probe as a full index scan: the skip is taken from here, a probe a class.
_MYSQL_FIRST_CLASS = (
    f"SELECT {CLASS_COLUMN} FROM {TABLE} WHERE {CLASS_COLUMN} IS NOT NULL ORDER BY 1 LIMIT 1"
)
_MYSQL_NEXT_CLASS = (
    f"SELECT {CLASS_COLUMN} FROM {TABLE} WHERE {CLASS_COLUMN} > %s ORDER BY 1 LIMIT 1"
)


def exception_classes(using: str, limit: int) -> list[str] | None:
    """Up to ``limit`` exception classes of all failures, each found by one
    index probe; None where no index serves it (SQLite, before 0024)."""
    connection = connections[using]
    if connection.vendor not in _CLASS or not has_class_index(using):
        return None
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_POSTGRESQL_CLASSES, [limit])
            return [str(name) for (name,) in cursor.fetchall()]
        names: list[str] = []
        while len(names) < limit:
            if names:
                cursor.execute(_MYSQL_NEXT_CLASS, [names[-1]])
            else:
                cursor.execute(_MYSQL_FIRST_CLASS)
            row = cursor.fetchone()
            if row is None:
                return names
            names.append(str(row[0]))
        return names


def class_figures(using: str, name: str, cap: int) -> tuple[int, Any]:
    """(failures of class ``name``, counted up to ``cap + 1``; when the
    newest of them failed), through the (class, id) index."""
    connection = connections[using]
    column = _CLASS[connection.vendor]
    sql = (
        f"SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM {TABLE} WHERE {column} = %s "
        f"LIMIT %s) capped), (SELECT created_at FROM {TABLE} WHERE {column} = %s "
        "ORDER BY id DESC LIMIT 1)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [name, cap + 1, name])
        count, latest = cursor.fetchone()
    if latest is not None and connection.vendor == "mysql":
        # Naive in the connection's zone, as the ORM would convert it.
        ops: Any = connection.ops
        latest = ops.convert_datetimefield_value(latest, None, connection)
    return int(count), latest


def class_rows_sql(using: str, name: str) -> tuple[str, list[Any]]:
    """The rows of one exception class, for the planner's estimate."""
    column = _CLASS[connections[using].vendor]
    return f"SELECT 1 FROM {TABLE} WHERE {column} = %s", [name]
