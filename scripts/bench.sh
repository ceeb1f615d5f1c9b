#!/usr/bin/env bash
# Benchmarks behind BENCHMARKS.md. Each creates and drops its own database.
#   DBS=postgresql scripts/bench.sh      # one database only
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
venv="$(scripts/venv.sh 311)"
for db in ${DBS:-postgresql mariadb sqlite}; do
    "$venv/bin/python" -m bench.enqueue "$db"
    "$venv/bin/python" -m bench.enqueue_bulk "$db"
    "$venv/bin/python" -m bench.drain "$db"
    "$venv/bin/python" -m bench.worker_cpu "$db"
done
# Enqueue beside django-tasks-db 0.13, in a venv of its own.
peers="$(scripts/venv.sh peers)"
for db in ${DBS:-postgresql mariadb sqlite}; do
    "$peers/bin/python" -m bench.peer_enqueue "$db"
done
# Drain beside django-tasks-db's db_worker.
"$peers/bin/python" -m bench.peer_drain postgresql --ours 1x3,2x3,2x4 --peer 1,2,4
"$peers/bin/python" -m bench.peer_drain mariadb --ours 1x3,2x3,2x4 --peer 1,2,4
"$peers/bin/python" -m bench.peer_drain sqlite --ours 2x1,1x3,2x3 --peer 1,2
# What the statistics add to a worker's drain, in instructions (valgrind).
for db in ${DBS:-postgresql mariadb sqlite}; do
    "$venv/bin/python" -m bench.statistics_instructions "$db"
    # A worker thread's claim/perform/finish-and-claim loop, in instructions.
    "$venv/bin/python" -m bench.worker_instructions "$db"
done
# Claim cost at 100k-1M ready jobs against 10k, and while a dispatcher
# moves 100k due scheduled jobs.
for db in postgresql mariadb; do
    "$venv/bin/python" -m bench.backlog "$db" --plans
    "$venv/bin/python" -m bench.dispatch_stall "$db"
done
"$venv/bin/python" -m bench.named_queue_skew
# I/O-bound jobs (20 ms sleep) by worker shape.
"$venv/bin/python" -m bench.drain postgresql --jobs 8000 --sleep-ms 20 \
    --shapes 2x4,2x8,2x16,2x16,2x8,2x4 --no-latency
# What MariaDB's claim and finish statements cost without Django.
"$venv/bin/python" -m bench.mariadb_floor --batch 1
"$venv/bin/python" -m bench.mariadb_floor --batch 3
# Deadlocks of workers + bulk discard/retry + retention on MariaDB.
"$venv/bin/python" -m bench.deadlock_storm mariadb --minutes 10
# Soak: an hour at half the drain rate over 1,000,000 finished jobs, with
# failures and retries, scheduled, recurring and concurrency-limited jobs,
# retention and a worker recycled by max_jobs; then 20 minutes with a
# 120-s read transaction every 3 minutes (issue 25 sections 6 and 7).
for db in postgresql mariadb; do
    "$venv/bin/python" -m bench.soak "$db"
    "$venv/bin/python" -m bench.soak "$db" --minutes 20 --long-transactions
done
# Admin pages over 1,000,000 finished + 50,000 failed jobs (PostgreSQL only).
"$venv/bin/python" -m bench.admin_timings
