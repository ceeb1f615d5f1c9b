"""The jobs admin: one list per state, a job page, and the actions on
jobs (retry, discard, run now, cancel, reschedule, bulk over a filter)."""
