"""SQLite: no row locks (the IMMEDIATE transaction is the lock), JSON1."""

from __future__ import annotations

from .base import Dialect


class SQLiteDialect(Dialect):
    vendor = "sqlite"
    _APPEND = "json_insert(worker_ids, '$[#]', %s)"

    def insert_ignoring_duplicates(self, table: str, values: str) -> str:
        return f"INSERT OR IGNORE INTO {table} {values}"
