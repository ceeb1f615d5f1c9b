#!/usr/bin/env bash
# The published form: `python -m build` makes a wheel and an sdist; both must
# hold the package, its migrations, templates and py.typed (and the sdist the
# LICENSE and every file the README links to), leak no tests, pass `twine
# check --strict` (the metadata is valid and PACKAGE.md renders as the long
# description), and install into a fresh venv (the wheel with its
# dependencies, the sdist built from source).
#   scripts/check-wheel.sh .venv311
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(cd "$1" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
if ! log="$("$venv/bin/python" -m build --outdir "$out/dist" . 2>&1)"; then
    echo "$log" >&2; exit 1
fi
wheel="$(ls "$out"/dist/robust_queue-*.whl)"
sdist="$(ls "$out"/dist/robust_queue-*.tar.gz)"
if ! log="$("$venv/bin/python" -m twine check --strict "$wheel" "$sdist" 2>&1)"; then
    echo "$log" >&2; exit 1
fi
echo "twine check ok"
"$venv/bin/python" - "$wheel" "$sdist" <<'PY'
import re, sys, tarfile, zipfile
wheel = zipfile.ZipFile(sys.argv[1]).namelist()
sdist = ["/".join(n.split("/")[1:]) for n in tarfile.open(sys.argv[2]).getnames()]
package = ("robust_queue/backend.py", "robust_queue/migrations/0001_initial.py",
           "robust_queue/py.typed", "robust_queue/templates/admin/robust_queue/")
for names, kind in ((wheel, "wheel"), (sdist, "sdist")):
    for needed in package:
        assert any(n.startswith(needed) for n in names), f"{needed} missing from the {kind}"
    assert not any(n.startswith(("tests/", "testproject/")) for n in names), f"tests leaked into the {kind}"
# The README's relative links (docs pages, images, root files) work in the sdist.
linked = re.findall(r"\]\((?!https?:|mailto:|#)([^)#\s]+)[^)]*\)", open("README.md").read())
assert len(linked) > 5, linked
for needed in ("LICENSE", "README.md", "mkdocs.yml", *linked):
    assert needed in sdist, f"{needed} missing from the sdist"
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel), "LICENSE missing from the wheel"
PY
"$venv/bin/python" -m venv "$out/venv"
check='
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=["robust_queue"], DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}})
django.setup()
import robust_queue, robust_queue.backend
assert "/venv/lib/" in robust_queue.__file__, robust_queue.__file__
print(robust_queue.__version__)'
"$out/venv/bin/python" -m pip install -q "$wheel" >/dev/null
echo "wheel ok: $(cd "$out" && venv/bin/python -c "$check")"
"$out/venv/bin/python" -m pip install -q --force-reinstall --no-deps "$sdist" >/dev/null
echo "sdist ok: $(cd "$out" && venv/bin/python -c "$check")"
