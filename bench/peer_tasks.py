"""The no-op task of ``bench.peer_enqueue``, once per backend."""

from robust_queue.compat import task


@task()
def ours(a: int, b: int) -> int:
    return a + b


@task(backend="peer")
def peer(a: int, b: int) -> int:
    return a + b
