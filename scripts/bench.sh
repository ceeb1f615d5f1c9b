#!/usr/bin/env bash
# Benchmarks behind BENCHMARKS.md. Each creates and drops its own database.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
venv="$(scripts/venv.sh 311)"
for db in ${DBS:-postgresql mariadb sqlite}; do
    "$venv/bin/python" -m bench.enqueue "$db"
done
if [ -f bench/drain.py ]; then
    for db in ${DBS:-postgresql mariadb sqlite}; do "$venv/bin/python" -m bench.drain "$db"; done
fi
# Admin pages over 1,000,000 finished + 50,000 failed jobs (PostgreSQL only).
"$venv/bin/python" -m bench.admin_timings
if [ -f bench/worker_cpu.py ]; then for db in ${DBS:-postgresql mariadb sqlite}; do "$venv/bin/python" -m bench.worker_cpu "$db"; done; fi
