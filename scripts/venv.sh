#!/usr/bin/env bash
# Create (or reuse) the virtualenv of one Django line and print its path.
#   scripts/venv.sh 311   -> .venv311: Python 3.11, Django 5.2 + django-tasks backport (+ mypy)
#   scripts/venv.sh 312   -> .venv312: Python 3.12, Django 6.1 (backport installed too)
#   scripts/venv.sh 360   -> .venv360: Python 3.12, Django 6.0
#   scripts/venv.sh 313   -> .venv313: Python 3.13, Django 6.1
#   scripts/venv.sh demo  -> .venvdemo: the newest Python >= 3.11 found, the package alone
#   scripts/venv.sh peers -> .venvpeers: 3.11, Django 5.2 and django-tasks-db (bench.peer_enqueue)
set -euo pipefail
cd "$(dirname "$0")/.."
line="${1:-311}"

find_python() {
    # pyenv's shims exist for versions that are not selected and then fail,
    # so a candidate counts only if it runs and reports the right version.
    local version root="" candidate
    command -v pyenv >/dev/null 2>&1 && root="$(pyenv root)"
    for version in "$@"; do
        for candidate in ${root:+"$root/versions/$version"*/bin/python3} "python$version"; do
            if "$candidate" -c "import sys; assert sys.version.startswith('$version')" >/dev/null 2>&1; then
                echo "$candidate"; return 0
            fi
        done
    done
    echo "Python $* not found" >&2
    return 1
}

tools=(-r requirements/dev.txt)
extras="[postgres,mysql,otel,encrypted]"
case "$line" in
    311) python="$(find_python 3.11)"; django="Django>=5.2,<6.0"; tools+=(-r requirements/typing.txt) ;;
    312) python="$(find_python 3.12)"; django="Django>=6.1,<6.2"; extras="[postgres,mysql,backport,otel,encrypted]" ;;
    360) python="$(find_python 3.12)"; django="Django>=6.0,<6.1" ;;
    313) python="$(find_python 3.13)"; django="Django>=6.1,<6.2" ;;
    demo) python="$(find_python 3.13 3.12 3.11)"; django=""; extras=""; tools=() ;;
    peers) python="$(find_python 3.11)"; django="Django>=5.2,<6.0"; extras="[postgres,mysql,backport]"; tools=("django-tasks-db==0.13.0" "procrastinate>=3.5,<4") ;;
    *) echo "unknown line $line (use 311, 312, 360, 313, demo or peers)" >&2; exit 2 ;;
esac

venv=".venv$line"
stamp="$venv/.installed-$(cat pyproject.toml requirements/*.txt | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
    "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q ${django:+"$django"} -e ".$extras" "${tools[@]}" >&2
    touch "$stamp"
fi
echo "$venv"
