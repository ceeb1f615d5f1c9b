"""Run ``manage.py robust_queue`` as if on another host.

    BENCH_HOSTNAME=host-3 python -m bench.as_host [robust_queue options]

``socket.gethostname()`` answers ``$BENCH_HOSTNAME`` in this process and
the processes it forks, so the supervisor, its workers and its dispatcher
register under that host name (process rows, worker ids, pruning by host)
as they would on a machine of their own. Used by ``bench.scale_out``.
"""

from __future__ import annotations

import os
import socket
import sys

from bench.common import ROOT


def main() -> None:
    hostname = os.environ["BENCH_HOSTNAME"]
    socket.gethostname = lambda: hostname
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["manage.py", "robust_queue", *sys.argv[1:]])


if __name__ == "__main__":
    main()
