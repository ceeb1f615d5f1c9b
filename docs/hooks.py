"""MkDocs hook: links from a page to files outside ``docs/``, and files
from outside ``docs/`` included in a page.

The Markdown links to the test suite (``../tests/...``) and to the
repository's root files (``../BENCHMARKS.md``) with relative paths, so that
it reads well on GitHub and in the sdist. The site has no copy of those
files, so there each such link becomes its text followed by the file's path
("`test_x` in `tests/...`"), or a link into the repository when
``repo_url`` is set in mkdocs.yml.

A line ``<!-- include: CHANGELOG.md -->`` (a path from the repository's
root) is replaced by that file at build time, its relative links made
relative to the page, so the site shows the file itself, never a copy.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(((?:\.\./)+[^)#\s]+)(#[^)\s]+)?\)")
_INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.MULTILINE)
# A link's or an image's relative target: not a URL, an anchor or an absolute path.
_RELATIVE = re.compile(r"(\[[^\]]*\]\()(?![a-z][a-z0-9+.-]*:|#|/)([^)\s]+)\)")
ROOT = Path(__file__).resolve().parent.parent


def outside_docs(page_path: str, target: str) -> str | None:
    """The repository path a link leaves ``docs/`` for, else None."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), target))
    if not joined.startswith("../"):
        return None
    return joined[len("../") :]


def included(markdown: str, page_path: str, root: Path = ROOT) -> str:
    """``markdown`` with each include line replaced by the file it names."""

    def include(match: re.Match[str]) -> str:
        source = match[1]
        text = (root / source).read_text(encoding="utf-8")
        return rebased(text, source, page_path)

    return _INCLUDE.sub(include, markdown)


def rebased(text: str, source: str, page_path: str) -> str:
    """Relative links of ``text`` (read from ``source``, a path from the
    repository's root) made relative to the page ``page_path`` in docs/."""
    page_dir = posixpath.join("docs", posixpath.dirname(page_path))

    def rebase(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), match[2]))
        return f"{match[1]}{posixpath.relpath(target, page_dir)})"

    return _RELATIVE.sub(rebase, text)


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    markdown = included(markdown, page.file.src_uri)
    repo = (config.get("repo_url") or "").rstrip("/")

    def replace(match: re.Match[str]) -> str:
        text, anchor = match[1], match[3] or ""
        path = outside_docs(page.file.src_uri, match[2])
        if path is None:
            return match[0]
        if repo:
            return f"[{text}]({repo}/blob/main/{path}{anchor})"
        if text.strip("`") == path:
            return f"`{path}` in the repository"
        return f"{text} in `{path}`"

    return _LINK.sub(replace, markdown)
