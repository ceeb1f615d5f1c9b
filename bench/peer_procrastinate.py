"""The procrastinate app ``bench.procrastinate_drain`` runs its workers
with (``procrastinate --app=bench.peer_procrastinate.app worker``): one
no-op task, on the database named by ``PROCRASTINATE_CONNINFO``."""

from __future__ import annotations

import os

import procrastinate

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=os.environ["PROCRASTINATE_CONNINFO"])
)


@app.task(name="add", queue="bench")
def add(a: int, b: int) -> int:
    return a + b
