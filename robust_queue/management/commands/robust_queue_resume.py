"""``manage.py robust_queue resume NAME...``: let workers claim again."""

from __future__ import annotations

from .robust_queue_pause import Command as PauseCommand


class Command(PauseCommand):
    help = "Resume paused queues: workers claim from them again."
    verb = "resume"
