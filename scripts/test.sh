#!/usr/bin/env bash
# The whole test suite: both Django lines x SQLite, PostgreSQL, MariaDB.
# Fails (never skips) when PostgreSQL or MariaDB is unreachable.
#   scripts/test.sh                  # everything
#   LINES=311 DBS=sqlite scripts/test.sh -k claim   # a slice, pytest args after
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-deps.sh
scripts/services.sh
lines="${LINES:-311 312}"
dbs="${DBS:-sqlite postgresql mariadb}"
failed=()
for line in $lines; do
    venv="$(scripts/venv.sh "$line")"
    scripts/check-wheel.sh "$venv" || failed+=("$line:wheel")
    if [ "$line" = 311 ]; then
        echo "=== mypy (Django 5.2 stubs) ==="
        PYTHONPATH=. "$venv/bin/mypy" || failed+=("$line:mypy")
    fi
    for db in $dbs; do
        echo "=== Python line $line, database $db ==="
        export ROBUST_QUEUE_TEST_DB="$db" ROBUST_QUEUE_DB_SUFFIX="_$line"
        "$venv/bin/python" -m pytest -q "$@" || failed+=("$line/$db")
    done
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all lines and databases passed"
