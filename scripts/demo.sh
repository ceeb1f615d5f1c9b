#!/usr/bin/env bash
# The demo: a venv with the package alone (no system packages, no database
# server), the SQLite testproject migrated, a mix of example tasks enqueued,
# the supervisor run until they are done, their results printed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(scripts/venv.sh demo)"
export ROBUST_QUEUE_TEST_DB=sqlite ROBUST_QUEUE_DB_SUFFIX=_demo ROBUST_QUEUE_DEBUG=0
python="$venv/bin/python"
"$python" manage.py migrate -v0
"$python" manage.py robust_queue_demo
cat <<TEXT

See the queue in the admin:
  ROBUST_QUEUE_DB_SUFFIX=_demo $python manage.py createsuperuser
  ROBUST_QUEUE_DB_SUFFIX=_demo $python manage.py runserver
  then open http://127.0.0.1:8000/admin/robust_queue/job/overview/
TEXT
