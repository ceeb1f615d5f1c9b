"""Hiding secrets in what the admin shows of a job or recurring task.

Every value goes through the core's one function (``robust_queue.masking``:
secret names, secret shapes, free text); this module adds what only the
admin knows: a task's positional parameter names (a positional value
whose parameter is secret is hidden), the ``admin_mask`` callable, and
the values an argument mask hid, hunted for again in the job's
tracebacks, error messages and keys (``secrets.py``).

``ROBUST_QUEUE["admin_mask"]`` may be a callable ``mask(task_path, data)
-> data`` (or its dotted path) given ``{"args": [...], "kwargs": {...},
"return_value": ...}``; what it returns is masked by the core as well.
Masking happens only for display; nothing here logs a value.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.utils.module_loading import import_string

from ... import conf, masking
from ...exceptions import DeserializationError, UnknownTaskError
from ...models import Job
from ...options.registry import resolve_task
from ...options.sealing import is_sealed
from .. import display
from .secrets import masked_values

MASK = masking.MASK
# The key table holds the default.
DEFAULT_MASK: tuple[str, ...] = masking.DEFAULT_NAMES
Rule = Callable[[str, dict[str, Any]], dict[str, Any]]

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MASK",
    "MASK",
    "Shown",
    "displayed",
    "error_message",
    "error_text",
    "error_texts",
    "hidden_key_value",
    "is_on",
    "shown",
    "shown_arguments",
    "shown_concurrency_key",
    "shown_key",
]


@dataclass(frozen=True, slots=True)
class Shown:
    """What the job page shows: JSON text, error records, the key."""

    arguments: str
    return_value: str
    metadata: str
    errors: list[dict[str, Any]]
    concurrency_key: str


def displayed(job: Job) -> dict[str, Any]:
    """Arguments and return value of ``job`` as the admin may show them.

    Raises ``DeserializationError`` if the arguments cannot be decoded.
    """
    args, kwargs = display.decoded_arguments(job.arguments)
    data = {"args": args, "kwargs": kwargs, "return_value": job.return_value}
    return _Masker(job.task_path, job.backend_alias).mask(data)


def shown(job: Job) -> Shown:
    """Everything the job page shows of ``job``, masked and printable."""
    masker = _Masker(job.task_path, job.backend_alias)
    try:
        args, kwargs = display.decoded_arguments(job.arguments)
        failure = None
    except DeserializationError as exc:
        args, kwargs, failure = [], {}, exc
    # An @encrypted task's: shown as "encrypted", never decrypted here.
    sealed = is_sealed(job.return_value)
    data = {"args": args, "kwargs": kwargs, "return_value": None if sealed else job.return_value}
    masked = masker.mask(data)
    secrets = masked_values(data, masked)
    errors = [
        {**record, "traceback": masker.mask_text(record["traceback"], secrets)}
        for record in display.error_records(job)
    ]
    return Shown(
        arguments=(
            display.ENCRYPTED
            if is_sealed(job.arguments)
            else display.cannot_decode(failure)
            if failure
            else display.pretty({"args": masked["args"], "kwargs": masked["kwargs"]})
        ),
        return_value=display.ENCRYPTED if sealed else display.pretty(masked["return_value"]),
        metadata=display.pretty(masker.mask_metadata(job.metadata)),
        errors=errors,
        concurrency_key=masker.mask_text(display.text(job.concurrency_key), secrets),
    )


def shown_concurrency_key(job: Job) -> str:
    """``job``'s concurrency key with the values its mask hides hidden."""
    return shown_key(job, display.text(job.concurrency_key))


def shown_key(job: Job, key: str) -> str:
    """A key built from ``job``'s arguments (its concurrency or unique
    key), with the values its mask hides hidden."""
    masker = _Masker(job.task_path, job.backend_alias)
    try:
        args, kwargs = display.decoded_arguments(job.arguments)
    except DeserializationError:
        return masker.hide_key_value(key)
    data = {"args": args, "kwargs": kwargs, "return_value": None}
    secrets = masked_values(data, masker.mask(data))
    return masker.mask_text(key, secrets)


def error_message(job: Job, traceback_text: Any) -> str:
    """The last line of a failure's traceback (exception and message),
    with the values ``job``'s mask hides hidden."""
    message = display.last_line(traceback_text)
    return error_text(job, message) if message else ""


def error_text(job: Job, text: str) -> str:
    """A traceback or error message of ``job`` as the admin shows it: the
    values ``job``'s mask hides hidden."""
    return _masked_error(_Masker(job.task_path, job.backend_alias), job, text)


def error_texts(rows: Iterable[tuple[Job, str]]) -> Iterator[tuple[Job, str]]:
    """``error_text`` of each (job, text), one mask per task: what a search
    over many failures reads."""
    maskers: dict[tuple[str, str], _Masker] = {}
    for job, text in rows:
        key = (job.task_path, job.backend_alias)
        masker = maskers.get(key) or maskers.setdefault(key, _Masker(*key))
        yield job, _masked_error(masker, job, text)


def _masked_error(masker: _Masker, job: Job, text: str) -> str:
    if not masker.rules.is_on:
        return text
    try:
        args, kwargs = display.decoded_arguments(job.arguments)
    except DeserializationError:
        return masker.mask_text(text, set())
    data = {"args": args, "kwargs": kwargs, "return_value": None}
    return masker.mask_text(text, masked_values(data, masker.mask(data)))


def is_on() -> bool:
    """Whether masking hides anything."""
    return masking.rules().is_on


def hidden_key_value(key: str) -> str:
    """A key whose job is unknown: its value part hidden when masking is on."""
    return _Masker("", "").hide_key_value(display.text(key))


def shown_arguments(task_path: str, backend_alias: str, arguments: Any) -> str:
    """Stored ``arguments`` of a task (a recurring one) as JSON text, masked.

    Recurring tasks store plain JSON arguments, not encoded ones.
    """
    if not isinstance(arguments, dict):
        return display.cannot_decode(f"arguments are a {type(arguments).__name__}")
    args, kwargs = arguments.get("args", []), arguments.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return display.cannot_decode("'args' must be a list and 'kwargs' an object")
    data = {"args": args, "kwargs": kwargs, "return_value": None}
    masked = _Masker(task_path, backend_alias).mask(data)
    return display.pretty({"args": masked["args"], "kwargs": masked["kwargs"]})


class _Masker:
    """The ``admin_mask`` rule applied to one task's values."""

    def __init__(self, task_path: str, backend_alias: str) -> None:
        self.task_path, self.backend_alias = task_path, backend_alias
        rule = conf.get(conf.ADMIN_MASK)
        if isinstance(rule, str):
            rule = import_string(rule)
        self.rule: Rule | None = rule if callable(rule) else None
        self.rules = masking.rules()

    def mask(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.rule is not None:
            data = self._apply_callable(self.rule, data)
        if not self.rules.is_on:
            return data
        positional = self._positional if self.rule is None else None
        args = [
            MASK
            if self.rule is None and self._is_secret_position(positional, index)
            else self._masked(value)
            for index, value in enumerate(data["args"] or [])
        ]
        kwargs = self._masked(data["kwargs"] or {})
        return {"args": args, "kwargs": kwargs, "return_value": self._masked(data["return_value"])}

    def mask_metadata(self, metadata: Any) -> Any:
        """Job metadata, masked by the core (names and shapes)."""
        return self._masked(metadata)

    def mask_text(self, text: str, secrets: set[str]) -> str:
        return self.rules.text(text, secrets)

    def hide_key_value(self, key: str) -> str:
        """``<group or task path>/********`` when masking is on."""
        prefix, slash, _ = key.partition("/")
        return f"{prefix}/{MASK}" if self.rules.is_on and slash else key

    def _masked(self, value: Any) -> Any:
        return masking.mask(value, using=self.rules)

    def _apply_callable(self, rule: Rule, data: dict[str, Any]) -> dict[str, Any]:
        try:
            masked = dict(rule(self.task_path, data))
            return {key: masked.get(key) for key in ("args", "kwargs", "return_value")}
        except Exception as exc:  # noqa: BLE001 - any failure of the user's mask
            # Showing a secret because the mask broke is worse than showing
            # nothing: hide everything. Log no value: the message of the
            # exception may hold one.
            logger.error(
                "admin_mask failed for %s with %s; hiding all values",
                self.task_path,
                type(exc).__name__,
            )
            return {"args": [MASK], "kwargs": {}, "return_value": MASK}

    def _is_secret_position(self, positional: list[str] | None, index: int) -> bool:
        # Unknown parameter names: any positional value might be a secret.
        if positional is None:
            return True
        return index < len(positional) and self.rules.is_secret_name(positional[index])

    @cached_property
    def _positional(self) -> list[str] | None:
        return self._parameter_names()

    def _parameter_names(self) -> list[str] | None:
        """Names of the task function's positional parameters, if it resolves."""
        try:
            task = resolve_task(self.task_path, self.backend_alias)
            parameters = list(inspect.signature(task.func).parameters.values())
        except (UnknownTaskError, TypeError, ValueError):
            return None
        if task.takes_context:
            parameters = parameters[1:]
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return [p.name for p in parameters if p.kind in kinds]
