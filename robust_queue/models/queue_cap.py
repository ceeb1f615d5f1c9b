"""The lock row of a capped queue: claims of that queue take turns on it.

``ROBUST_QUEUE["queues"] = {"mail": {"max_concurrency": 5}}`` lets at most
5 jobs of ``mail`` run at once over every worker on every host. A claim of a
capped queue runs in one transaction that first locks the queue's row here
(``SELECT ... FOR UPDATE``: the next claimer of that queue waits for the
commit), then counts the queue's claimed executions and claims at most the
room left. Finishing, failing or releasing a job only deletes its claim and
never touches this row: a claim that counts while a job finishes sees one
job too many, never one too few. SQLite's IMMEDIATE transaction already lets
one writer in at a time. Uncapped queues never read this table.

A claim that takes jobs also writes the row (its ``claims`` counter), and
the count is taken in a statement that also reads the counter: if that
snapshot shows an older value than the locked read, it predates the
previous claim's commit and the count is taken again (under REPEATABLE READ
it cannot refresh: the claim then takes nothing). This guards against a
waiter that is granted the lock before the previous holder's commit shows
in its snapshot. The race test once saw 6 running under a cap of 5 on
MariaDB 10.11 before this guard; the cause was not pinned down, and 16
runs with the write disabled did not repeat it.
"""

from __future__ import annotations

import time

from django.db import models

from .sql import dialect_for

# Fresh snapshots tried before a claim gives up (it then claims nothing).
_COUNT_ATTEMPTS = 20


class QueueCapQuerySet(models.QuerySet["QueueCap"]):
    def lock(self, queue_name: str) -> int | None:
        """Take ``queue_name``'s lock row until the caller's transaction
        ends and return its claims counter; None if the row does not exist
        yet (``ensure`` it, outside the transaction).

        Plain statements: the caller's ``transaction()`` (MySQL's own) must
        not see an ``atomic()`` inside it.
        """
        dialect = dialect_for(self.db)
        sql = f"SELECT claims FROM {dialect.tables.queue_cap} WHERE queue_name = %s{dialect.for_update()}"
        with dialect.connection.cursor() as cursor:
            cursor.execute(sql, [queue_name])
            row = cursor.fetchone()
        return None if row is None else int(row[0])

    def running(self, queue_name: str, claims: int) -> int | None:
        """How many jobs of ``queue_name`` are claimed, counted in a snapshot
        that shows the locked ``claims`` value; None if none did."""
        dialect = dialect_for(self.db)
        tables = dialect.tables
        sql = (
            f"SELECT (SELECT claims FROM {tables.queue_cap} WHERE queue_name = %s), "
            f"(SELECT COUNT(*) FROM {tables.claimed} c JOIN {tables.job} j ON j.id = c.job_id "
            "WHERE j.queue_name = %s)"
        )
        with dialect.connection.cursor() as cursor:
            for attempt in range(_COUNT_ATTEMPTS):
                cursor.execute(sql, [queue_name, queue_name])
                seen, count = cursor.fetchone()
                if int(seen) == claims:
                    return int(count)
                time.sleep(0.001 * attempt)
        return None

    def record_claim(self, queue_name: str) -> None:
        """Bump the claims counter of the row this transaction locked."""
        dialect = dialect_for(self.db)
        sql = f"UPDATE {dialect.tables.queue_cap} SET claims = claims + 1 WHERE queue_name = %s"
        with dialect.connection.cursor() as cursor:
            cursor.execute(sql, [queue_name])

    def ensure(self, queue_name: str) -> None:
        """Make sure ``queue_name``'s lock row exists.

        In autocommit, never inside a claim: two transactions inserting the
        same row while others wait to lock it deadlock on MySQL/MariaDB.
        """
        dialect = dialect_for(self.db)
        sql = dialect.insert_ignoring_duplicates(
            dialect.tables.queue_cap, "(queue_name, claims) VALUES (%s, 0)"
        )
        with dialect.connection.cursor() as cursor:
            cursor.execute(sql, [queue_name])


class QueueCap(models.Model):
    queue_name = models.CharField(max_length=64, unique=True)
    # Claims that took jobs, ever (see the module docstring).
    claims = models.BigIntegerField(default=0)

    objects = QueueCapQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_queue_cap"
        default_permissions = ()

    def __str__(self) -> str:
        return f"cap of {self.queue_name}"
