"""Robust Queue processes: supervisor, workers, dispatchers, scheduler."""
