#!/usr/bin/env bash
# Build the documentation site strictly (any warning fails) into site/.
# Uses its own venv, .venv-docs, with requirements/docs.txt (MkDocs only:
# no theme or plugin that fetches anything, so the build runs offline once
# the venv exists; a pinned requirement already met needs no index).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-docs
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r requirements/docs.txt
"$venv/bin/mkdocs" build --strict --clean --site-dir site "$@"
echo "Documentation built in site/ (open site/index.html)."
