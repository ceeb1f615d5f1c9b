#!/usr/bin/env bash
# Build the wheel and install it into a throw-away venv: the package, its
# migrations and templates must all be inside, and it must import.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(cd "$1" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" -m pip wheel -q --no-deps -w "$out/dist" . >/dev/null
wheel="$(ls "$out"/dist/robust_queue-*.whl)"
"$venv/bin/python" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for needed in ("robust_queue/backend.py", "robust_queue/migrations/0001_initial.py", "robust_queue/py.typed"):
    assert needed in names, f"{needed} missing from the wheel"
assert not any(n.startswith(("tests/", "testproject/")) for n in names), "tests leaked into the wheel"
PY
"$venv/bin/python" -m pip install -q --no-deps --target "$out/site" "$wheel" >/dev/null
(cd "$out" && PYTHONPATH="$out/site" "$venv/bin/python" -c "
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=['robust_queue'], DATABASES={'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'}})
django.setup()
import robust_queue, robust_queue.backend
assert robust_queue.__file__.startswith('$out/site'), robust_queue.__file__
print('wheel ok:', robust_queue.__version__)")
