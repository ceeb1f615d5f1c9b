"""``manage.py robust_queue prune``: the old name of ``clear``, kept working.

"Prune" names what happens to dead processes (as in Solid Queue); jobs are
cleared. The old name runs ``clear`` after a deprecation message on stderr.
"""

from __future__ import annotations

from typing import Any

from .robust_queue_clear import Command as ClearCommand

DEPRECATION = (
    "`robust_queue prune` is deprecated and will be removed: use "
    "`manage.py robust_queue clear` (or `robust_queue_clear`), which takes the "
    'same options. "Prune" now names only the removal of dead processes.'
)


class Command(ClearCommand):
    help = f"Deprecated: use `robust_queue clear`. {ClearCommand.help}"

    def handle(self, *args: Any, **options: Any) -> None:
        self.stderr.write(DEPRECATION)
        super().handle(*args, **options)
