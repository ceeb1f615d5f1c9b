"""Hiding secrets in whatever the admin shows: arguments, keys, free text."""
