"""Imported by tasks.py at its top."""
