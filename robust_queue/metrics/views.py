"""The metrics view: staff with ``robust_queue.view_metrics``, or a
request carrying ``Authorization: Bearer <ROBUST_QUEUE["metrics_token"]>``.
Anyone else gets 403."""

from __future__ import annotations

import hmac

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .. import conf
from .collect import collect
from .exposition import CONTENT_TYPE, render

PERMISSION = "robust_queue.view_metrics"


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus' text format for the queue's database."""
    if not _is_allowed(request):
        raise PermissionDenied("Metrics need the view_metrics permission or the metrics token.")
    text = render(collect(conf.queue_database()))
    return HttpResponse(text, content_type=CONTENT_TYPE)


def _is_allowed(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff and user.has_perm(PERMISSION):
        return True
    token = conf.get(conf.METRICS_TOKEN)
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if not token or scheme.lower() != "bearer" or not given:
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())
