#!/usr/bin/env bash
# Install the system packages the test suite needs on a fresh Debian machine:
# headers and a compiler for mysqlclient, Chromium for the admin's browser
# tests, libfaketime for the clock-skew tests, PgBouncer for the tests that
# run the queue behind it in transaction pooling. Only what is missing, without recommended packages; when another
# apt or dpkg holds its lock, wait for it (up to APT_LOCK_WAIT seconds).
set -euo pipefail
need=()
pkg-config --exists libmariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null || need+=(libmariadb-dev pkg-config)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v chromium >/dev/null || need+=(chromium fonts-liberation)
command -v faketime >/dev/null || need+=(faketime)
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || need+=(pgbouncer)
[ ${#need[@]} -gt 0 ] || exit 0

sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
wait_limit="${APT_LOCK_WAIT:-600}"

apt_get() {
    local err waited=0
    err="$(mktemp)"
    until "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get -qq -o DPkg::Lock::Timeout="$wait_limit" "$@" 2>"$err"; do
        if ! grep -q -e "Could not get lock" -e "Unable to lock" "$err" || [ "$waited" -ge "$wait_limit" ]; then
            cat "$err" >&2; rm -f "$err"; return 1
        fi
        [ "$waited" -gt 0 ] || echo "system-deps: another apt/dpkg holds the lock; waiting..." >&2
        sleep 5; waited=$((waited + 5))
    done
    rm -f "$err"
}

echo "system-deps: installing ${need[*]}" >&2
apt_get update
apt_get install -y --no-install-recommends "${need[@]}" >/dev/null
