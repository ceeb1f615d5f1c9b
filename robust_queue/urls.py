"""URLs to include in a project: ``path("queue/", include("robust_queue.urls"))``."""

from __future__ import annotations

from django.urls import path

from .metrics.views import metrics

app_name = "robust_queue"
urlpatterns = [path("metrics", metrics, name="metrics")]
