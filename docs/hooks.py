"""MkDocs hook: links from a page to files outside ``docs/``.

The Markdown links to the test suite (``../tests/...``) and to the
repository's root files (``../BENCHMARKS.md``) with relative paths, so that
it reads well on GitHub and in the sdist. The site has no copy of those
files, so there each such link becomes its text followed by the file's path
("`test_x` in `tests/...`"), or a link into the repository when
``repo_url`` is set in mkdocs.yml.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(((?:\.\./)+[^)#\s]+)(#[^)\s]+)?\)")


def outside_docs(page_path: str, target: str) -> str | None:
    """The repository path a link leaves ``docs/`` for, else None."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), target))
    if not joined.startswith("../"):
        return None
    return joined[len("../") :]


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
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
