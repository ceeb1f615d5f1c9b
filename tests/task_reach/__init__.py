"""Modules whose import statements tests/integration/models/test_registry_imports.py
follows: listed as a task module, this package imports ``tasks``, which imports
``helpers`` at its top and ``deferred`` inside a function; nothing imports
``unimported``."""

from . import tasks  # noqa: F401
