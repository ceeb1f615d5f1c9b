"""Secrets kept out of log lines: the package's and the framework's.

``install()`` (run when the app is ready) puts ``MaskingFilter`` on every
logger of the package and on the Tasks framework's (``django.tasks``;
``django_tasks`` for the backport), which logs a failed task's traceback
and message. Only records at WARNING or above, or with a traceback, are
masked: the INFO lines of every job (``robust_queue.jobs``) name ids,
tasks and queues, never a value, and cost nothing more.

Add ``MaskingFilter`` to a handler to mask what your own code logs.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..exceptions import ConfigurationError
from . import DEFAULT_NAMES, Rules, rules
from .shapes import default_shapes

# The framework's loggers (named here, not imported: compat.py alone
# imports the framework).
FRAMEWORK_LOGGERS = ("django.tasks", "django_tasks")
_FORMATTER = logging.Formatter()


class MaskingFilter(logging.Filter):
    """Masks a record's message and traceback in place; drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING and not record.exc_info:
            return True
        chosen = safe_rules()
        if not chosen.is_on:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - the handler reports a bad record
            return True
        masked = chosen.text(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _FORMATTER.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = chosen.text(record.exc_text)
        if record.stack_info:
            record.stack_info = chosen.text(record.stack_info)
        return True


def install() -> None:
    """``MaskingFilter`` on the package's loggers and the framework's
    (once: a second call adds nothing)."""
    for name in (*FRAMEWORK_LOGGERS, *package_loggers()):
        logger = logging.getLogger(name)
        if not any(isinstance(f, MaskingFilter) for f in logger.filters):
            logger.addFilter(MaskingFilter())


def package_loggers() -> list[str]:
    """The name of every module's logger (``getLogger(__name__)``) and
    the job log's, imported or not: a logger made now is the one the
    module gets when it is imported."""
    root = Path(__file__).resolve().parent.parent
    names = {"robust_queue", "robust_queue.jobs"}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def safe_rules() -> Rules:
    """The rules, or the default ones if the settings are bad (the checks
    report them): masking must never break logging."""
    try:
        return rules()
    except ConfigurationError:
        # A bad mask setting (reported by the checks) must not break
        # logging, nor show what the default rules would hide.
        return Rules(DEFAULT_NAMES, default_shapes())
