#!/usr/bin/env bash
# Create (or reuse) the virtualenv of one Django line and print its path.
#   scripts/venv.sh 311   -> .venv311: Python 3.11, Django 5.2 + django-tasks backport
#   scripts/venv.sh 312   -> .venv312: Python 3.12, Django 6.1
set -euo pipefail
cd "$(dirname "$0")/.."
line="${1:-311}"

find_python() {
    # pyenv's shims exist for versions that are not selected and then fail,
    # so a candidate counts only if it runs and reports the right version.
    local version="$1" candidate root=""
    command -v pyenv >/dev/null 2>&1 && root="$(pyenv root)"
    for candidate in ${root:+"$root/versions/$version"*/bin/python3} "python$version"; do
        if "$candidate" -c "import sys; assert sys.version.startswith('$version')" >/dev/null 2>&1; then
            echo "$candidate"; return 0
        fi
    done
    echo "Python $version not found" >&2
    return 1
}

case "$line" in
    311) python="$(find_python 3.11)"; django="Django>=5.2,<6.0"; extras=",typing" ;;
    312) python="$(find_python 3.12)"; django="Django>=6.1,<6.2"; extras=",backport" ;;
    *) echo "unknown line $line (use 311 or 312)" >&2; exit 2 ;;
esac

venv=".venv$line"
stamp="$venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
    "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q "$django" -e ".[postgres,mysql,dev$extras]" >&2
    touch "$stamp"
fi
echo "$venv"
