"""Robust Queue's own signals, beside DEP 0014's ``task_enqueued``,
``task_started`` and ``task_finished`` (see ``compat``).

Each is sent once per event, after the change is committed, in the process
that made it (a worker's signals fire in that worker's process). Receivers
run synchronously: keep them short, and never let them raise — an
exception in one propagates to the code that sent it.

- ``job_retried(sender=Job, job, retry_at, error)``: a failed attempt
  will run again (its retry policy said so); ``error`` is the stored
  ``{"exception_class_path", "traceback"}``.
- ``job_discarded(sender=Job, result_id, task_path, queue_name, using)``:
  a job was deleted by a discard (admin, ``Job.discard()``).
- ``job_cancelled`` / ``job_timed_out(sender=Job, job, error)``: a job
  ended cancelled (a waiting one when ``cancel()`` took it out of its
  queue, a running one when its cancelled attempt was recorded), or an
  attempt ran past its time limit (sent also when the retry policy runs
  it again, with ``job_retried``).
- ``job_snoozed(sender=Job, job, run_at)``: a run ended in
  ``robust_queue.Snooze``; the job runs again at ``run_at``.
- ``process_started`` / ``process_stopped(sender=<Runnable class>,
  process, runnable)``: a supervisor, worker, dispatcher or scheduler
  registered, or deregistered (``runnable.recycled`` says why a recycled
  worker stopped).
- ``process_pruned(sender=Process, process, failed_jobs)``: a silent
  process was pruned and its claims failed.
- ``queue_paused`` / ``queue_resumed(sender=Queue, queue)``: a queue was
  paused or resumed (not sent when it already was).
"""

from __future__ import annotations

from django.dispatch import Signal

job_retried = Signal()
job_discarded = Signal()
job_cancelled = Signal()
job_timed_out = Signal()
job_snoozed = Signal()
process_started = Signal()
process_stopped = Signal()
process_pruned = Signal()
queue_paused = Signal()
queue_resumed = Signal()
