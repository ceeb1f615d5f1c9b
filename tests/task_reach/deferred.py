"""Imported by tasks.py inside a function."""

VALUE = 1
