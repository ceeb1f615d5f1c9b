"""Task options: ``RobustQueueTask`` and everything a task declares
(retry, concurrency, unique, rate limit, tags, retention, time limit,
recurring), their decorators and validation, and the registry of the
tasks a job row may name. Below the models: nothing here reads a table."""
