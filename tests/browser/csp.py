"""A test-only middleware: every response carries a strict script policy."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

STRICT_POLICY = "script-src 'self'"


class StrictScriptPolicyMiddleware:
    """Adds ``Content-Security-Policy: script-src 'self'``: no inline script
    or inline event handler runs, as on a hardened production site."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response["Content-Security-Policy"] = STRICT_POLICY
        return response
