#!/usr/bin/env bash
# The documentation site first (scripts/docs.sh, strict: a broken page
# fails the run), then the whole test suite, in cells of (Python/Django
# line, database):
#   311  Python 3.11, Django 5.2 + backport  x sqlite postgresql mariadb
#   312  Python 3.12, Django 6.1             x sqlite postgresql mariadb
#        (tests/unit in SQLite's cell only; see unit_db_of and trimmed below)
# and, when LINES names them (not by default: the run must stay under 45
# minutes on 2 cores, and the two lines above are the ones CI promises):
#   360  Python 3.12, Django 6.0             x postgresql (all but the process tier)
#   313  Python 3.13, Django 6.1             x postgresql (the process tier)
# plus mypy and ruff (lint and format check, on 311) and the package build (scripts/check-wheel.sh).
# Each (line, database) is two cells: its process tier (tests/processes:
# real supervisors, mostly waiting on them) and the rest (mostly CPU), so
# that waiting and working cells overlap. Cells run JOBS at a time (default
# 3), each with its own databases and its own log in artifacts/test-logs/;
# the logs are printed at the end, then one line per cell. SPLIT=0 keeps a
# (line, database) in one cell: use it when the pytest args name test paths. Fails (never skips) when PostgreSQL or MariaDB is unreachable, when
# the browser tier cannot run, or when any cell fails.
#   scripts/test.sh                                 # everything
#   LINES=311 DBS=sqlite scripts/test.sh -k claim   # a slice, pytest args after
#   DB_PREFIX=mine scripts/test.sh   # test databases named ..._mine_311: two
#                                    # checkouts on the same servers never collide
#   JOBS=1 scripts/test.sh           # one cell at a time
set -euo pipefail
cd "$(dirname "$0")/.."
echo "=== documentation ==="
scripts/docs.sh
scripts/system-deps.sh
scripts/services.sh

lines="${LINES:-311 312}"
jobs="${JOBS:-3}"
split="${SPLIT:-1}"
logs=artifacts/test-logs
pytest_args=("$@")

dbs_of() {
    if [ -n "${DBS:-}" ]; then echo "$DBS"; return; fi
    case "$1" in 311|312) echo "postgresql mariadb sqlite" ;; *) echo postgresql ;; esac
}

# tests/unit never opens a database (SimpleTestCase only; a unit test that
# needs one belongs in tests/integration), so each line runs it once: in its
# SQLite cell, or its first database's when DBS leaves SQLite out.
unit_db_of() {
    local dbs
    dbs=" $(dbs_of "$1") "
    if [[ "$dbs" == *" sqlite "* ]]; then echo sqlite; else read -r first _ <<<"$dbs"; echo "$first"; fi
}

# The two extra lines (LINES="311 312 360 313") repeat 312's Django 6.1 /
# 3.12 runs, so each runs one tier (with SPLIT=1): 360 (Django 6.0) the
# ORM-facing rest, 313 (Python 3.13) the process tier (forks, signals,
# threads).
tiers_of() {
    case "$1" in 360) echo rest ;; 313) echo processes ;; *) echo "processes rest" ;; esac
}

# The default run's 312 line (DBS unset) repeats 311's databases under
# Django 6.1 and leaves out what depends on the database but hardly on
# Django: the process tier of the two servers (311 runs it on all three;
# 312 runs SQLite's, where Python 3.12's forks, signals and threads meet
# the supervisor) and the browser tier outside SQLite (311 runs it on every
# database). PostgreSQL's process tier is the run's longest cell. Naming
# DBS runs every tier of what it names.
trimmed() { [ "$1" = 312 ] && [ -z "${DBS:-}" ] && [ "$2" != sqlite ]; }

declare -A venvs
for line in $lines; do
    echo "=== virtualenv $line ==="
    venvs[$line]="$(scripts/venv.sh "$line")"
done

# The slowest cells first, so that the last ones to start are short.
cells=()
for db in postgresql mariadb sqlite; do
    for line in $lines; do
        if [[ " $(dbs_of "$line") " == *" $db "* ]]; then
            tiers=" $(tiers_of "$line") "
            if [ "$split" != 1 ]; then
                cells+=("$line/$db")
                continue
            fi
            if [[ "$tiers" == *" processes "* ]] && ! trimmed "$line" "$db"; then
                cells+=("$line/$db-processes")
            fi
            if [[ "$tiers" == *" rest "* ]]; then cells+=("$line/$db"); fi
        fi
    done
done
if [[ " $lines " == *" 311 "* ]]; then cells+=("311/mypy" "311/ruff"); fi
read -r first_line _ <<<"$lines"
cells+=("$first_line/package")

cell() {
    local line="${1%%/*}" what="${1#*/}"
    local venv="${venvs[$line]}"
    case "$what" in
        mypy) PYTHONPATH=. "$venv/bin/mypy" ;;
        ruff) "$venv/bin/ruff" check . && "$venv/bin/ruff" format --check . ;;
        package) scripts/check-wheel.sh "$venv" ;;
        *-processes)
            ROBUST_QUEUE_TEST_DB="${what%-processes}" \
            ROBUST_QUEUE_DB_SUFFIX="_${DB_PREFIX:+${DB_PREFIX}_}${line}p" \
            ROBUST_QUEUE_REQUIRE_PGBOUNCER=1 \
                "$venv/bin/python" -m pytest -q tests/processes "${pytest_args[@]}"
            ;;
        *)
            local tiers=()
            [ "$split" = 1 ] && tiers=(--ignore=tests/processes)
            [ "$what" != "$(unit_db_of "$line")" ] && tiers+=(--ignore=tests/unit)
            trimmed "$line" "$what" && tiers+=(--ignore=tests/browser)
            ROBUST_QUEUE_TEST_DB="$what" \
            ROBUST_QUEUE_DB_SUFFIX="_${DB_PREFIX:+${DB_PREFIX}_}$line" \
            ROBUST_QUEUE_REQUIRE_BROWSER=1 \
            ROBUST_QUEUE_REQUIRE_PGBOUNCER=1 \
                "$venv/bin/python" -m pytest -q "${tiers[@]}" "${pytest_args[@]}"
            ;;
    esac
}

log_of() { echo "$logs/${1//\//-}.log"; }

start() {
    local log
    log="$(log_of "$1")"
    echo "--- started  $1"
    (
        set +e
        SECONDS=0
        cell "$1" >"$log" 2>&1
        rc=$?
        echo "$rc" >"$log.rc"
        echo "--- finished $1 in ${SECONDS}s (exit $rc): $(tail -n 1 "$log")"
    ) &
}

# The machine's busy share over the cells (from /proc/stat): near 100 %
# means the run is bound by CPU and only less work shortens it; well below,
# more cells at once (JOBS) would.
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
read -r busy_before idle_before <<<"$(cpu_ticks)"
SECONDS=0

rm -rf "$logs"
mkdir -p "$logs"
running=0
for name in "${cells[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    start "$name"
    running=$((running + 1))
done
wait || true

failed=()
for name in "${cells[@]}"; do
    echo
    echo "=================================== $name ==================================="
    cat "$(log_of "$name")"
done
echo
echo "=================================== summary ==================================="
read -r busy_after idle_after <<<"$(cpu_ticks)"
busy=$((busy_after - busy_before)) idle=$((idle_after - idle_before))
echo "cells took ${SECONDS}s on $(nproc) CPUs, busy $((100 * busy / (busy + idle + 1)))% of the time"
for name in "${cells[@]}"; do
    log="$(log_of "$name")"
    rc="$(cat "$log.rc" 2>/dev/null || echo missing)"
    [ "$rc" = 0 ] && verdict=ok || { verdict=FAILED; failed+=("$name"); }
    printf '%-18s %-7s %s\n' "$name" "$verdict" "$(tail -n 1 "$log")"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all lines and databases passed"
