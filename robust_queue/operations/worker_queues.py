"""Worker queues that no task uses (start-up warning W020), for ``health``.

The start-up check reads the workers of this supervisor's configuration;
``health`` runs elsewhere (a probe, cron), so it also reads the selectors
that live workers registered, which include a supervisor's ``--queues``.
"""

from __future__ import annotations

from django.core.checks import CheckMessage

from ..models import Process, ProcessKind
from ..processes.config import SupervisorConfig
from .startup import unused_worker_queues


def unused(config: SupervisorConfig, live: list[Process]) -> list[CheckMessage]:
    """W020 for each selector of the configured or live workers that
    matches no queue in use; the selector is each message's ``obj``."""
    configured = [s for worker in config.workers for s in worker.queues]
    return unused_worker_queues(config.database, configured + _live_selectors(live))


def _live_selectors(live: list[Process]) -> list[str]:
    selectors: list[str] = []
    for process in live:
        if process.kind == ProcessKind.WORKER and isinstance(process.metadata, dict):
            queues = process.metadata.get("queues")
            if isinstance(queues, list):
                selectors += [s for s in queues if isinstance(s, str)]
    return selectors
