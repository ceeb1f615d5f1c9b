"""Enqueueing beyond ``Task.enqueue``: many calls at once, batches with
callbacks, and jobs that run after others."""
