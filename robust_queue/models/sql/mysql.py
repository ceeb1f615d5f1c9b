"""MySQL and MariaDB: transactions of their own, one delete per row, bytes.

Django's ``atomic()`` here switches the session out of autocommit mode and
back: ``SET autocommit=0``, the statements, ``COMMIT``, ``SET
autocommit=1``. A claim of one job is five statements and a finish two, run
once per job, so those two extra round trips are a large share of their
cost. Outside any atomic block ``transaction()`` sends ``START
TRANSACTION`` and ``COMMIT`` instead: the session stays in autocommit mode,
which is what Django believes it is in, and the statements in between are
one transaction all the same. Inside an atomic block (a caller's
transaction, a test case) and on a connection with ``AUTOCOMMIT`` off it is
``atomic()``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from django.db.backends.utils import CursorWrapper

from .base import Dialect

logger = logging.getLogger(__name__)


class MySQLDialect(Dialect):
    vendor = "mysql"
    _APPEND = "JSON_ARRAY_APPEND(worker_ids, '$', %s)"
    # The job's column keeps the server's collation, which may ignore case:
    # compare bytes, like every other pause.
    _PAUSED_PATHS = "BINARY p.task_path = BINARY j.task_path"
    _LOCK_WAIT = (
        "SELECT @@SESSION.innodb_lock_wait_timeout",
        "SET SESSION innodb_lock_wait_timeout = %s",
    )

    def transaction(self, *, savepoint: bool = True) -> AbstractContextManager[None]:
        # START TRANSACTION would commit whatever a session that is not in
        # autocommit mode (AUTOCOMMIT=False, atomic()) has pending.
        if not self.connection.get_autocommit():
            return super().transaction(savepoint=savepoint)
        return self._started_transaction()

    @contextmanager
    def _started_transaction(self) -> Iterator[None]:
        self._execute("START TRANSACTION")
        try:
            yield
            self._execute("COMMIT")
        except BaseException:
            self._roll_back()
            raise

    def _execute(self, sql: str) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute(sql)

    def _roll_back(self) -> None:
        try:
            self._execute("ROLLBACK")
        except Exception:
            # A session that cannot roll back may still hold the transaction
            # and its row locks; closing it makes the server roll back.
            logger.warning("ROLLBACK failed; closing the connection", exc_info=True)
            self.connection.close()

    def _delete_ids(self, cursor: CursorWrapper, table: str, pks: Sequence[Any]) -> None:
        # A multi-row DELETE may scan the table when statistics are stale
        # and wait on rows other claimers locked: a deadlock. One statement
        # per primary key always uses the primary key.
        cursor.executemany(f"DELETE FROM {table} WHERE id = %s", [(pk,) for pk in pks])

    def insert_ignoring_duplicates(self, table: str, values: str) -> str:
        return f"INSERT IGNORE INTO {table} {values}"

    def _adding(self, table: str, keys: list[str], added: list[str]) -> str:
        sets = ", ".join(f"{c} = {c} + VALUES({c})" for c in added)
        return f" ON DUPLICATE KEY UPDATE {sets}"

    def error_code(self, exc: BaseException) -> int | None:
        # Django's wrapper keeps the driver's args: (code, message).
        code = exc.args[0] if exc.args else None
        return code if isinstance(code, int) else None
