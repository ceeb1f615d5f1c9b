#!/usr/bin/env bash
# Install the system packages the test suite needs on a fresh Debian machine:
# headers for mysqlclient, and Chromium for the admin's browser tests.
set -euo pipefail
need=()
pkg-config --exists libmariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null || need+=(libmariadb-dev pkg-config)
command -v gcc >/dev/null || need+=(build-essential)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
