"""Aliases: the import paths a task was known by, so its queued jobs still run.

A job row names its task by import path (``Job.task_path``). Renaming the
function or moving its module would strand every job enqueued before the
deploy; a task that declares its old paths keeps running them::

    @aliases("billing.tasks.send_invoice", "billing.jobs.send_invoice")
    @task
    def email_invoice(invoice_id): ...

or ``@task(aliases=["billing.tasks.send_invoice"])``. The registry
(``registry.py``) resolves a row's old path to the task (its function,
options and ``get_result``); two tasks claiming one alias, or an alias
that is a declared task's own path, is a ``ConfigurationError`` when the
second of them is declared (``manage.py check`` names its module and line).

A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .option import Call, Option

# A job's task_path column (models.Job, backend.TASK_PATH_MAX_LENGTH).
ALIAS_MAX_LENGTH = 255
# Dotted Python names: at least a module and a name.
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
ALIAS_RULE = (
    f"an import path such as 'myapp.tasks.old_name' (dotted Python names, "
    f"at most {ALIAS_MAX_LENGTH} characters)"
)


def alias_problems(paths: Iterable[object]) -> list[str]:
    """What is wrong with ``paths`` as a task's aliases (none: nothing)."""
    return [f"alias {path!r} is not {ALIAS_RULE}." for path in paths if not is_alias(path)]


def is_alias(path: object) -> bool:
    """Whether ``path`` may be an alias (an import path)."""
    return (
        isinstance(path, str)
        and len(path) <= ALIAS_MAX_LENGTH
        and _PATH.fullmatch(path) is not None
    )


def _aliases(*paths: str) -> tuple[str, ...]:
    """Run the jobs queued under ``paths`` (the import paths this task was
    known by: before a rename or a move) with this task; stacked over
    ``@task``."""
    problems = alias_problems(paths)
    if problems:
        raise ValueError(" ".join(problems))
    if not paths:
        raise ValueError("name at least one old import path.")
    return tuple(sorted(set(paths)))


def _keyword(value: object) -> object:
    # aliases=[...] is @aliases(...); aliases="a.b" is @aliases("a.b"); no
    # paths is no option.
    if isinstance(value, str):
        return Call((value,))
    if not isinstance(value, Iterable):
        return value
    paths = tuple(value)
    return Call(paths) if paths else None


ALIASES = Option(
    name="aliases",
    kind=tuple,
    make=_aliases,
    problems=alias_problems,
    takes="a list of import paths",
    keyword=_keyword,
)
aliases = ALIASES.decorator()
