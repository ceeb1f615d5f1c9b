"""Imported by nothing a worker imports."""
