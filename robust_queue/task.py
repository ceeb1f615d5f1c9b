"""The backend's ``task_class``: Django's ``Task`` plus Robust Queue options.

Django passes extra ``@task`` keyword arguments to the backend's task class,
so concurrency limits can be declared there too::

    @task(limits_concurrency={"key": lambda account: account, "to": 2})
    def sync(account): ...

which is the same as stacking ``@limits_concurrency(...)`` over ``@task``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .compat import Task
from .concurrency import limits_concurrency as limit_decorator
from .exceptions import ConfigurationError


@dataclass(frozen=True, slots=True, kw_only=True)
class RobustQueueTask(Task):  # type: ignore[misc]
    limits_concurrency: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        # Explicit base call: zero-argument super() breaks in slotted
        # dataclasses on Python 3.11.
        Task.__post_init__(self)
        if self.limits_concurrency is None:
            return
        if not isinstance(self.limits_concurrency, Mapping):
            raise ConfigurationError(
                "@task(limits_concurrency=...) takes a dict of limits_concurrency() "
                f"options, not {self.limits_concurrency!r}."
            )
        try:
            decorator = limit_decorator(**self.limits_concurrency)
        except TypeError as exc:
            raise ConfigurationError(f"@task(limits_concurrency=...): {exc}") from exc
        decorator(self)
