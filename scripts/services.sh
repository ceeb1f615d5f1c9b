#!/usr/bin/env bash
# Make sure PostgreSQL and MariaDB answer on 127.0.0.1; start them if not.
set -euo pipefail
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if ! mariadb-admin -uroot -h127.0.0.1 ping >/dev/null 2>&1; then
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
wait_for_servers() {
    for _ in $(seq 1 30); do
        if pg_isready -q -h 127.0.0.1 -p 5432 && mariadb-admin -uroot -h127.0.0.1 ping >/dev/null 2>&1; then
            return 0
        fi
        sleep 1
    done
}
wait_for_servers

# Cells run at once, and a process test forks 20 workers of ~4 connections
# each: the servers' default limits (PostgreSQL 100, MariaDB 151) are met
# and a worker's heartbeat then fails with "too many clients". Raise them
# once (PostgreSQL's needs a restart: only when it is below the need).
need=400
if [ "$(psql -h 127.0.0.1 -U postgres -Atc 'SHOW max_connections')" -lt "$need" ]; then
    echo "services: raising PostgreSQL's max_connections to $need (restart)" >&2
    psql -h 127.0.0.1 -U postgres -qc "ALTER SYSTEM SET max_connections = $need"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart
    wait_for_servers
fi
if [ "$(mariadb -uroot -h127.0.0.1 -Nse 'SELECT @@max_connections')" -lt "$need" ]; then
    mariadb -uroot -h127.0.0.1 -e "SET GLOBAL max_connections = $need"
fi
if ! (pg_isready -q -h 127.0.0.1 -p 5432 && mariadb-admin -uroot -h127.0.0.1 ping >/dev/null 2>&1); then
    echo "PostgreSQL or MariaDB is not reachable on 127.0.0.1" >&2
    exit 1
fi

