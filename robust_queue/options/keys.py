"""The key of one call, for concurrency limits, rate limits and unique jobs:
``<group or task path>/<key part>``.

A key is a string or a callable over the task's arguments. Tables hold
the keys computed here (semaphores, blocked jobs, rate windows, unique
claims), so what one call gives must stay the same from one release to
the next, to the byte: ``tests/unit/test_option_keys.py`` pins some.

A leaf: nothing here reads settings or the models' tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import models

from ..compat import Task
from ..exceptions import EnqueueError

KeyFunction = Callable[..., Any]


def key_part(value: Any) -> str:
    """A key's value as text: a model instance as ``app.model:pk``, the
    items of a list or tuple joined with ``/``, anything else by ``str()``."""
    if isinstance(value, models.Model):
        return f"{value._meta.label_lower}:{value.pk}"
    if isinstance(value, (list, tuple)):
        return "/".join(key_part(item) for item in value)
    return str(value)


def key_from_call(
    key: Any,
    task: Task[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    what: str,
    group: str | None = None,
    part: Callable[[Any], str] = key_part,
    max_length: int | None = None,
) -> str:
    """``<group or task path>/<part of the key's value>`` for one call.

    ``key`` is called with the call's arguments if it is callable; its
    error is an ``EnqueueError`` naming ``what`` ("concurrency key"). A key
    longer than ``max_length`` keeps its start and ends with ``#`` and the
    SHA-256 of the whole key, so keys that differ only at the end stay
    apart.
    """
    if callable(key):
        try:
            value = key(*args, **kwargs)
        except Exception as exc:
            raise EnqueueError(
                f"The {what} of task {task.module_path} could not be "
                f"computed from its arguments: {type(exc).__name__}: {exc}"
            ) from exc
    else:
        value = key
    text = f"{group or task.module_path}/{part(value)}"
    if max_length is not None and len(text) > max_length:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        text = f"{text[: max_length - 65]}#{digest}"
    return text
