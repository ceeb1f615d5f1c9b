"""Prometheus metrics, read cluster-wide from the database.

``collect.collect(using)`` gathers the families, ``exposition.render``
writes Prometheus' text format (no dependency), ``views.metrics`` serves
them to staff with ``robust_queue.view_metrics`` or to a bearer token.
"""
