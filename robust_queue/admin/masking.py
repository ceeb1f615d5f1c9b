"""Hiding secrets in arguments and return values shown by the admin.

``ROBUST_QUEUE["admin_mask"]`` is either a list of argument names (their
values, wherever they appear as a keyword, a positional parameter or a dict
key, show as ``MASK``) or a callable ``mask(task_path, data) -> data``
(or its dotted path) given
``{"args": [...], "kwargs": {...}, "return_value": ...}``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Collection
from typing import Any

from django.utils.module_loading import import_string

from .. import conf
from ..arguments import decode_arguments
from ..exceptions import UnknownTaskError
from ..models import Job
from ..registry import resolve_task

MASK = "********"

logger = logging.getLogger(__name__)


def displayed(job: Job) -> dict[str, Any]:
    """Arguments and return value of ``job`` as the admin may show them."""
    args, kwargs = decode_arguments(job.arguments, fetch_models=False)
    data = {"args": args, "kwargs": kwargs, "return_value": job.return_value}
    rule = conf.setting("admin_mask")
    if isinstance(rule, str):
        rule = import_string(rule)
    if callable(rule):
        return _apply_callable(rule, job.task_path, data)
    if rule:
        return _mask_names(job, data, set(rule))
    return data


def _apply_callable(
    rule: Callable[[str, dict[str, Any]], dict[str, Any]],
    task_path: str,
    data: dict[str, Any],
) -> dict[str, Any]:
    try:
        return dict(rule(task_path, data))
    except Exception:
        # Showing a secret because the mask broke is worse than showing
        # nothing: hide everything and say why in the log.
        logger.exception("admin_mask failed for %s; hiding all values", task_path)
        return {"args": [MASK], "kwargs": {}, "return_value": MASK}


def _mask_names(job: Job, data: dict[str, Any], names: set[str]) -> dict[str, Any]:
    positional = _parameter_names(job)
    # Unknown parameter names: any positional value might be a secret.
    args = [
        (
            MASK
            if positional is None or (index < len(positional) and positional[index] in names)
            else _scrub(value, names)
        )
        for index, value in enumerate(data["args"])
    ]
    kwargs = {
        key: MASK if key in names else _scrub(value, names)
        for key, value in data["kwargs"].items()
    }
    return {
        "args": args,
        "kwargs": kwargs,
        "return_value": _scrub(data["return_value"], names),
    }


def _scrub(value: Any, names: Collection[str]) -> Any:
    if isinstance(value, dict):
        return {key: MASK if key in names else _scrub(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, names) for item in value]
    return value


def _parameter_names(job: Job) -> list[str] | None:
    """Names of the task function's positional parameters, if it resolves."""
    try:
        task = resolve_task(job.task_path, job.backend_alias)
    except UnknownTaskError:
        return None
    parameters = list(inspect.signature(task.func).parameters.values())
    if getattr(task, "takes_context", False):
        parameters = parameters[1:]
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in kinds]
