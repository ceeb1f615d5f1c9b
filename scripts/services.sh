#!/usr/bin/env bash
# Make sure PostgreSQL and MariaDB answer on 127.0.0.1; start them if not.
set -euo pipefail
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if ! mariadb-admin -uroot -h127.0.0.1 ping >/dev/null 2>&1; then
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
for _ in $(seq 1 30); do
    if pg_isready -q -h 127.0.0.1 -p 5432 && mariadb-admin -uroot -h127.0.0.1 ping >/dev/null 2>&1; then
        exit 0
    fi
    sleep 1
done
echo "PostgreSQL or MariaDB is not reachable on 127.0.0.1" >&2
exit 1
