"""The key an enqueue claims: an idempotency key, or the task's unique key.

Keys are per task path and stored as a SHA-256 hash; a readable label is
kept for operators.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..arguments import encode_arguments
from ..compat import Task
from ..exceptions import EnqueueError
from .keys import key_from_call
from .uniqueness import ONCE, UNIQUE, Uniqueness

LABEL_MAX_LENGTH = 255


@dataclass(frozen=True, slots=True)
class UniqueClaim:
    """One enqueue's claim on a key: its hash (the unique column), a
    readable label, and what makes the job holding it count."""

    key_hash: str
    label: str
    uniqueness: Uniqueness


def claim_for(
    task: Task[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    arguments: Mapping[str, Any],
    once_key: str | None = None,
) -> UniqueClaim | None:
    """The claim of one call: its idempotency key, else the task's
    ``unique`` option; None when it has neither."""
    if once_key is not None:
        text = f"once:{task.module_path}/{once_key}"
        return _claim(text, ONCE)
    uniqueness = UNIQUE.of(task)
    if uniqueness is None:
        return None
    return _claim(f"unique:{_key_text(uniqueness, task, args, kwargs, arguments)}", uniqueness)


def _key_text(
    uniqueness: Uniqueness,
    task: Task[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    arguments: Mapping[str, Any],
) -> str:
    """``<task path>/<key>``; the default key is every argument, as
    canonical JSON."""
    if uniqueness.key is None:
        return f"{task.module_path}/{_canonical(arguments)}"
    return key_from_call(
        uniqueness.key, task, args, kwargs, what="unique key", part=partial(_key_part, task)
    )


def _claim(text: str, uniqueness: Uniqueness) -> UniqueClaim:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return UniqueClaim(digest, _label(text), uniqueness)


def _label(text: str) -> str:
    # Shown to operators only; the hash is what is compared.
    text = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode()
    return text if len(text) <= LABEL_MAX_LENGTH else text[: LABEL_MAX_LENGTH - 1] + "…"


def _key_part(task: Task[..., Any], value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return _canonical(encode_arguments((value,), {})["args"][0])
    except TypeError as exc:
        raise EnqueueError(
            f"The unique key of task {task.module_path} must be a string or a value "
            f"that serialises like an argument: {exc}"
        ) from exc


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
