"""Secret values known by their shape, whatever they are called.

Each shape is a regular expression; what it matches is hidden. A match
that has a group named ``keep`` keeps that part (``Bearer ``, a URL up to
its password) so that the text still says what was there.
"""

from __future__ import annotations

import re

# (what it is, its expression). Prefixes come from each provider's
# documentation of its key formats; lengths are minimums, so that prose
# ("sk_live_ keys") is not masked.
DEFAULT_SHAPES: tuple[tuple[str, str], ...] = (
    (
        "PEM private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    ),
    ("Stripe secret or restricted key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{8,}"),
    ("Stripe webhook secret", r"\bwhsec_[0-9A-Za-z]{16,}"),
    ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("GitHub token", r"\b(?:gh[pousr]_[0-9A-Za-z]{20,}|github_pat_[0-9A-Za-z_]{20,})"),
    ("GitLab token", r"\bglpat-[0-9A-Za-z_-]{20,}"),
    ("Slack token", r"\bxox[abposr]-[0-9A-Za-z-]{10,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("JSON Web Token", r"\beyJ[0-9A-Za-z_-]+\.[0-9A-Za-z_-]+\.[0-9A-Za-z_-]*"),
    # Tokens are long; "Bearer authentication" in prose is not one.
    ("bearer token", r"(?P<keep>\b[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+)[0-9A-Za-z._~+/-]{16,}=*"),
    (
        "password in a URL",
        r"(?P<keep>\b[a-zA-Z][\w+.-]*://[^\s/:@'\"]*:)[^\s/@'\"]+(?=@)",
    ),
)


def compiled(expressions: tuple[str, ...] | list[str]) -> tuple[re.Pattern[str], ...]:
    """The expressions compiled as shapes are (``.`` spans lines)."""
    return tuple(re.compile(expression, re.DOTALL) for expression in expressions)


def default_shapes() -> tuple[re.Pattern[str], ...]:
    return _DEFAULT


_DEFAULT = compiled([expression for _, expression in DEFAULT_SHAPES])

# What each default shape's every match contains, lower-cased: a text
# holding none of it is not scanned with that shape (a search masks
# thousands of tracebacks, and most hold no secret). Shapes from settings
# have none: they always scan.
_HINTS: dict[re.Pattern[str], tuple[str, ...]] = dict(
    zip(
        _DEFAULT,
        (
            ("-----begin",),
            ("k_live_", "k_test_"),
            ("whsec_",),
            ("akia", "asia"),
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
            ("glpat-",),
            ("xox",),
            ("aiza",),
            ("eyj",),
            ("bearer",),
            ("://",),
        ),
        strict=True,
    )
)


def hide_shapes(text: str, shapes: tuple[re.Pattern[str], ...], mask: str) -> str:
    """``text`` with every match of ``shapes`` hidden behind ``mask``."""

    def hidden(match: re.Match[str]) -> str:
        keep = match.groupdict().get("keep")
        return f"{keep or ''}{mask}"

    lowered: str | None = None
    for shape in shapes:
        hints = _HINTS.get(shape)
        if hints is not None:
            lowered = text.lower() if lowered is None else lowered
            if not any(hint in lowered for hint in hints):
                continue
        masked = shape.sub(hidden, text)
        if masked != text:
            text, lowered = masked, None
    return text
