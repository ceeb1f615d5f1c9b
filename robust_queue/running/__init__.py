"""One job's run: perform it, finalize it exactly once, snooze, the rate
gate, its attempt log, its metadata and the ``TaskResult`` built from
its row."""
