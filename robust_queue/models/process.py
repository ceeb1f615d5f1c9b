"""A registered supervisor, worker, dispatcher or scheduler, and its life:
register, heartbeat, deregister, and — when it dies — prune it and fail
what it claimed.

Every claim is ended by exactly one transition (finish, fail or release):
``ClaimedExecution._take`` fences them, so a pruned worker giving its jobs
back and a supervisor failing them cannot both win.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import timedelta
from functools import partial
from typing import Any, TypeAlias

from django.db import models
from django.db.models import Case, ExpressionWrapper, F, Q, Value, When
from django.db.models.expressions import CombinedExpression
from django.utils import timezone

from .. import signals
from ..exceptions import ProcessExitError, ProcessPrunedError
from .clock import DatabaseNow

logger = logging.getLogger(__name__)

# Said of every claim failed because its process is gone: its body may
# have run to the end, so a retry is not harmless.
OUTCOME_NOT_RECORDED = "The job may have run, wholly or in part, but its outcome was not recorded."
# Said of a claim whose body its worker saw end (``Process.note_unrecorded``):
# what it did, e.g. "it returned 3".
BODY_FINISHED = "The body finished ({}); its outcome could not be recorded."
# Where a worker leaves those (claim pk -> what the body did) on its row.
UNRECORDED_KEY = "unrecorded_outcomes"


class ProcessKind(models.TextChoices):
    SUPERVISOR = "supervisor", "Supervisor"
    WORKER = "worker", "Worker"
    DISPATCHER = "dispatcher", "Dispatcher"
    SCHEDULER = "scheduler", "Scheduler"


class ProcessCommand(models.TextChoices):
    """What an operator asked a worker (``Process.ask``), then what the
    worker made of it (``Process.acknowledge``) on its next heartbeat."""

    QUIET = "quiet", "Quiet asked"
    QUIETED = "quieted", "Quiet"
    STOP = "stop", "Stop asked"
    STOPPING = "stopping", "Stopping"


# A command asked and the state the process is in once it has acted on it.
COMMAND_DONE = {
    ProcessCommand.QUIET: ProcessCommand.QUIETED,
    ProcessCommand.STOP: ProcessCommand.STOPPING,
}
# The commands a process can be asked, and those each one can follow.
ASKABLE_KINDS = (ProcessKind.WORKER,)
ASKABLE_AFTER: dict[str, tuple[str | None, ...]] = {
    ProcessCommand.QUIET: (None,),
    ProcessCommand.STOP: (None, ProcessCommand.QUIET, ProcessCommand.QUIETED),
}


# Runs one row's step (its description, the step); returns what it did.
Guard: TypeAlias = "Callable[[str, Callable[[], int]], int]"


def _unguarded(concerns: str, step: Callable[[], int]) -> int:
    return step()


def _cutoff(threshold: float) -> CombinedExpression:
    """``threshold`` s before the database's now: liveness is judged on
    the clock heartbeats are written with, never the reading host's."""
    return DatabaseNow() - timedelta(seconds=threshold)


class ProcessQuerySet(models.QuerySet["Process"]):
    def alive(self, threshold: float) -> ProcessQuerySet:
        """Processes that heartbeat within the last ``threshold`` s."""
        return self.filter(last_heartbeat_at__gte=_cutoff(threshold))

    def stale(self, threshold: float) -> ProcessQuerySet:
        """Processes whose last heartbeat is older than ``threshold`` s."""
        return self.filter(last_heartbeat_at__lt=_cutoff(threshold))

    def with_liveness(self, threshold: float) -> ProcessQuerySet:
        """Annotate ``heartbeat_age`` (a timedelta) and ``is_alive``, both
        on the database's clock."""
        return self.annotate(
            heartbeat_age=ExpressionWrapper(
                DatabaseNow() - F("last_heartbeat_at"), output_field=models.DurationField()
            ),
            is_alive=Case(
                When(last_heartbeat_at__gte=_cutoff(threshold), then=Value(True)),
                default=Value(False),
                output_field=models.BooleanField(),
            ),
        )

    def register(self, **fields: Any) -> Process:
        """Insert a process row, its times taken from the database's clock."""
        process = self.create(last_heartbeat_at=DatabaseNow(), created_at=DatabaseNow(), **fields)
        process.refresh_from_db(fields=["last_heartbeat_at", "created_at"])
        return process

    def prune(
        self, threshold: float, *, keep: int | None = None, guard: Guard = _unguarded
    ) -> list[Process]:
        """Prune the processes silent for ``threshold`` s (but ``keep``),
        each on its own; return those pruned.

        ``guard(concerns, step)`` runs each one's prune: the supervisor's
        skips (and logs once) a row that cannot be pruned, so that it does
        not hold up the others.
        """
        stale = self.stale(threshold)
        if keep is not None:
            stale = stale.exclude(pk=keep)
        return [
            process
            for process in stale
            if guard(
                f"Pruning {process} (row {process.pk}, pid {process.pid} on {process.hostname})",
                partial(process.prune, threshold),
            )
        ]

    def fail_all_claims(self, reason: str) -> int:
        """These processes died: fail their claims, drop their rows."""
        return sum(process.fail_claims(reason) for process in self)


class Process(models.Model):
    kind = models.CharField(max_length=16, choices=ProcessKind.choices)
    name = models.CharField(max_length=128)
    pid = models.IntegerField()
    hostname = models.CharField(max_length=255, blank=True, default="")
    supervisor = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supervisees",
    )
    last_heartbeat_at = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Set from the admin, read by the process on its heartbeat (a
    # ``ProcessCommand``); None: carry on.
    command = models.CharField(max_length=16, null=True, blank=True, choices=ProcessCommand.choices)

    objects = ProcessQuerySet.as_manager()

    class Meta:
        db_table = "robust_queue_process"
        verbose_name_plural = "processes"
        permissions = [("command_process", "Can quiet and stop worker processes")]
        indexes = [
            models.Index(fields=["last_heartbeat_at"], name="rq_process_heartbeat"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "supervisor"], name="rq_process_name_supervisor"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"

    def heartbeat(self) -> bool:
        """Record that this process is alive; False if its row is gone."""
        return bool(self._row().update(last_heartbeat_at=DatabaseNow()))

    def can_be_asked(self, command: str) -> bool:
        """Whether ``command`` (quiet, stop) may be sent to this process now."""
        return self.kind in ASKABLE_KINDS and self.command in ASKABLE_AFTER.get(command, ())

    def ask(self, command: str) -> bool:
        """Ask this worker to quiet (claim no more jobs) or stop (exit as on
        TERM; its supervisor starts a fresh one); it acts on its next
        heartbeat. False if its row is gone or the command no longer
        applies (it was asked to stop already, or is no worker)."""
        if command not in ASKABLE_AFTER:
            raise ValueError(f"Unknown process command {command!r}")
        after = ASKABLE_AFTER[command]
        current = Q(command__in=[value for value in after if value is not None])
        if None in after:
            current |= Q(command__isnull=True)
        asked = self._row().filter(current, kind__in=ASKABLE_KINDS).update(command=command)
        if asked:
            self.command = command
        return bool(asked)

    def pending_command(self) -> str | None:
        """The command asked of this process and not acted on yet."""
        asked = self._row().filter(command__in=list(COMMAND_DONE))
        return asked.values_list("command", flat=True).first()

    def acknowledge(self, command: str) -> bool:
        """Record that this process acts on ``command`` (quiet -> quieted,
        stop -> stopping); False if another command replaced it meanwhile."""
        done = COMMAND_DONE[ProcessCommand(command)]
        acted = bool(self._row().filter(command=command).update(command=done))
        if acted:
            self.command = done
        return acted

    def deregister(self) -> None:
        """Remove this process's row (its supervisees keep theirs)."""
        self._row().delete()

    def prune(self, threshold: float) -> bool:
        """Drop this row if it is still stale, then fail its claims with
        ``ProcessPrunedError``; False if it beat meanwhile (or is gone).

        Claims it makes after its row is gone are orphans (the supervisor's
        orphan sweep fails them).
        """
        deleted, _ = self._row().stale(threshold).delete()
        if not deleted:
            return False
        failed = self._fail_own_claims(
            ProcessPrunedError,
            f"{self.kind} {self.name} (pid {self.pid} on {self.hostname}) "
            "stopped heartbeating and was pruned.",
        )
        logger.warning("Pruned %s; failed %d claimed job(s)", self.name, failed)
        signals.process_pruned.send(sender=Process, process=self, failed_jobs=failed)
        return True

    def fail_claims(self, reason: str) -> int:
        """This process died (``reason``): fail its claims with
        ``ProcessExitError``, then drop its row."""
        failed = self._fail_own_claims(ProcessExitError, f"{self.name} (pid {self.pid}) {reason}.")
        self._row().delete()
        if failed:
            logger.error("%s %s; failed %d claimed job(s)", self.name, reason, failed)
        return failed

    def note_unrecorded(self, outcomes: dict[int, str]) -> None:
        """Leave on this row what the bodies of claims whose outcome could
        not be written did (claim pk -> e.g. "it returned 3"): whoever
        fails those claims says so, not that the job may have run."""
        noted = {**self.metadata, UNRECORDED_KEY: {str(pk): did for pk, did in outcomes.items()}}
        self._row().update(metadata=noted)
        self.metadata = noted

    def _fail_own_claims(self, error_class: type[BaseException], preamble: str) -> int:
        """Fail this process's claims with ``error_class``: ``preamble``,
        then what their bodies did where the row says so."""
        claims = self.claimed_executions.all()
        noted = self.metadata.get(UNRECORDED_KEY) if isinstance(self.metadata, dict) else None
        failed = 0
        for pk, did in (noted if isinstance(noted, dict) else {}).items():
            message = f"{preamble} {BODY_FINISHED.format(did)}"
            failed += claims.filter(pk=int(pk)).fail_all_with(error_class, message)
            claims = claims.exclude(pk=int(pk))
        return failed + claims.fail_all_with(error_class, f"{preamble} {OUTCOME_NOT_RECORDED}")

    def supervisees_with_pid(self, pid: int) -> ProcessQuerySet:
        """The rows the child ``pid`` of this supervisor registered."""
        return self._all().filter(supervisor_id=self.pk, pid=pid)

    def adopt(self, *, pids: Iterable[int], pks: Iterable[int]) -> int:
        """Point the unsupervised rows of these children at this process
        (re-registered after it was pruned): its forked children by pid on
        its host, its thread children by row."""
        rows = self._all().filter(supervisor__isnull=True)
        rows = rows.filter(Q(hostname=self.hostname, pid__in=list(pids)) | Q(pk__in=list(pks)))
        return rows.exclude(pk=self.pk).update(supervisor_id=self.pk)

    def _all(self) -> ProcessQuerySet:
        return Process.objects.using(self._state.db)

    def _row(self) -> ProcessQuerySet:
        return self._all().filter(pk=self.pk)
