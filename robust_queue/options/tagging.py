"""Tags: labels set at enqueue, stored on the job, filterable in the admin.

A task declares its own with ``@tags("billing", "eu")`` stacked over
``@task`` (or ``@task(tags=[...])``); ``with job_tags("import-42"):`` adds
tags to every job enqueued inside the block (blocks nest). A job's tags
are both, without duplicates. They are written to ``JobTag`` in the
enqueue's transaction; a job without tags writes nothing more (and keeps
the one-statement enqueue on PostgreSQL).

A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..compat import Task
from ..exceptions import ConfigurationError, EnqueueError
from .option import Call, Option

TAG_MAX_LENGTH = 100
MAX_TAGS = 20
TAG_RULE = f"a string of 1 to {TAG_MAX_LENGTH} characters without control characters"

_CURRENT: ContextVar[tuple[str, ...]] = ContextVar("robust_queue_job_tags", default=())


def tag_problems(values: Collection[Any]) -> list[str]:
    """What is wrong with ``values`` as the tags of a job (none: nothing)."""
    problems = [f"tag {value!r} is not {TAG_RULE}." for value in values if not _is_tag(value)]
    if not problems and len(set(values)) > MAX_TAGS:
        problems.append(f"{len(set(values))} tags; a job takes at most {MAX_TAGS}.")
    return problems


def checked_tags(values: Collection[Any], what: str) -> tuple[str, ...]:
    """``values`` as sorted, distinct tags; ``ConfigurationError`` if not valid."""
    problems = tag_problems(values)
    if problems:
        raise ConfigurationError(f"{what}: " + " ".join(problems))
    return tuple(sorted(set(values)))


def _tags(*names: str) -> tuple[str, ...]:
    """Tag every job of a task with ``names``."""
    problems = tag_problems(names)
    if problems:
        raise ValueError(" ".join(problems))
    return tuple(sorted(set(names)))


def _keyword(value: object) -> object:
    # tags=[...] is @tags(...); no tags is no option.
    if isinstance(value, str) or not isinstance(value, Iterable):
        return value
    names = tuple(value)
    return Call(names) if names else None


TAGS = Option(name="tags", kind=tuple, make=_tags, takes="a list of tags", keyword=_keyword)
tags = TAGS.decorator()


@contextmanager
def job_tags(*names: str) -> Iterator[tuple[str, ...]]:
    """Tag every job enqueued inside the block with ``names`` (added to the
    outer blocks' and the task's own). Bad tags raise here, before any
    enqueue."""
    merged = checked_tags({*_CURRENT.get(), *checked_tags(names, "job_tags()")}, "job_tags()")
    token = _CURRENT.set(merged)
    try:
        yield merged
    finally:
        _CURRENT.reset(token)


def for_enqueue(task: Task[..., Any]) -> tuple[str, ...]:
    """The tags of a job of ``task`` being enqueued now (``()``: none)."""
    own = TAGS.of(task) or ()
    current = _CURRENT.get()
    if not current:
        return own
    merged = {*own, *current}
    problems = tag_problems(merged)
    if problems:
        raise EnqueueError(f"Tags of task {task.module_path}: " + " ".join(problems))
    return tuple(sorted(merged))


def _is_tag(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= TAG_MAX_LENGTH and value.isprintable()
