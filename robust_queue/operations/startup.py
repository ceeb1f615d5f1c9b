"""What ``manage.py robust_queue`` checks before it starts (``--check`` too).

Beyond the system checks (``checks.py``), these need the final
configuration (``--queues`` included) and the queue's database: the
configuration is valid, the queue's migrations are applied, every worker
queue is one that some task uses, every queue with ready jobs is polled, and
no queued job or recurring task names a path that no task declares.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import partial

from django.core import checks
from django.db import DatabaseError, connections

from .. import conf
from ..checks import check_settings
from ..compat import task_backends
from ..models import Job, Pause, ReadyExecution, ScheduledExecution
from ..options import discovery, recurrence
from ..processes import throwaway
from ..processes.config import SupervisorConfig
from ..processes.launch import problems
from ..processes.selector import plan_for
from .stranded import stranded_jobs, stranded_recurring

APP_LABEL = "robust_queue"


def check(config: SupervisorConfig) -> list[checks.CheckMessage]:
    """Errors stop the command; warnings are printed and it goes on."""
    # The system checks again: call_command() and --skip-checks skip them.
    errors = [message for message in check_settings() if message.is_serious()]
    if not errors:
        errors = [checks.Error(p, id="robust_queue.E023") for p in problems(config)]
    if errors:
        return errors
    try:
        # Loading every app's migrations is needed only here: a throwaway
        # child does it, so the supervisor does not keep them.
        unapplied = throwaway.run(partial(unapplied_migrations, config.database))
    except DatabaseError as exc:
        return [_unreachable(config.database, exc)]
    if unapplied:
        return [_migrate(config.database, unapplied)]
    try:
        configured = (s for worker in config.workers for s in worker.queues)
        return [
            *unused_worker_queues(config.database, configured),
            *_unpolled_queues(config),
            *stranded_warnings(config.database),
        ]
    except DatabaseError as exc:
        return [_unreachable(config.database, exc)]


def unapplied_migrations(using: str) -> list[str]:
    """Robust Queue's migrations not applied to database ``using``."""
    # Imported here: it loads the migration machinery, which the supervisor
    # needs only for this check (run in a throwaway child, ``check()``).
    from django.db.migrations.executor import MigrationExecutor  # noqa: PLC0415

    executor = MigrationExecutor(connections[using])
    leaves = [node for node in executor.loader.graph.leaf_nodes() if node[0] == APP_LABEL]
    return [
        f"{migration.app_label}.{migration.name}"
        for migration, backwards in executor.migration_plan(leaves)
        if migration.app_label == APP_LABEL and not backwards
    ]


def format_message(message: checks.CheckMessage) -> str:
    text = f"({message.id}) {message.msg}"
    return f"{text}\n    HINT: {message.hint}" if message.hint else text


def _migrate(using: str, unapplied: list[str]) -> checks.CheckMessage:
    command = "python manage.py migrate"
    if using != conf.DEFAULT_DATABASE:
        command += f" --database {using}"
    return checks.Error(
        f"The queue's tables in database {using!r} are missing or out of date: "
        f"{len(unapplied)} migration(s) not applied ({', '.join(unapplied)}).",
        hint=f"Run `{command}` first.",
        id="robust_queue.E022",
    )


def _unreachable(using: str, exc: DatabaseError) -> checks.CheckMessage:
    return checks.Error(
        f"Database {using!r} cannot be reached: {type(exc).__name__}: {exc}".strip(),
        hint=f"Check DATABASES[{using!r}] and that the server is running.",
        id="robust_queue.E024",
    )


def unreachable_in_system_checks(exc: DatabaseError) -> checks.CheckMessage:
    """E024 for a database Django's own system checks could not reach
    (Django 6.1 checks every database); which one, its error says."""
    return checks.Error(
        f"A database cannot be reached by Django's system checks: {type(exc).__name__}: {exc}",
        hint="Check DATABASES and that each server is running.",
        id="robust_queue.E024",
    )


def unused_worker_queues(using: str, selectors: Iterable[str]) -> list[checks.CheckMessage]:
    """Warning W020 for each of ``selectors`` that matches no queue in use
    (the selector is the message's ``obj``); ``health`` reports them too."""
    known = _known_queues(using)
    return [
        checks.Warning(
            f"Worker queue {selector!r} is used by no task Robust Queue knows "
            "of: a worker polling it may wait forever.",
            hint=(
                _did_you_mean(selector, known)
                + f"Queues in use: {', '.join(sorted(known)) or 'none found'} (from the "
                "tasks of each app's tasks module and ROBUST_QUEUE['task_modules'], "
                "TASKS[...]['QUEUES'], recurring tasks and stored jobs). Check the "
                "spelling, or list the module that holds the task in task_modules."
            ),
            obj=selector,
            id="robust_queue.W020",
        )
        for selector in sorted(set(selectors) - {"*"})
        if not _matches(selector, known) and not _has_jobs(using, selector)
    ]


def _has_jobs(using: str, selector: str) -> bool:
    """Whether the job table holds a job of a queue ``selector`` matches,
    in any state: a queue chosen with ``.using(queue_name=...)`` is in use
    while its jobs run and after. Asked only of a selector that matched
    nothing else; one index read (``rq_job_queue_finished``)."""
    jobs = Job.objects.using(using).order_by("queue_name")
    if not selector.endswith("*"):
        return jobs.filter(queue_name=selector).exists()
    prefix = selector[:-1]
    first = jobs.filter(queue_name__gte=prefix).values_list("queue_name", flat=True)[:1]
    return any(name.startswith(prefix) for name in first)


def _unpolled_queues(config: SupervisorConfig) -> list[checks.CheckMessage]:
    if not config.workers:
        return []  # --only-dispatch: the workers run elsewhere
    selectors = tuple(s for worker in config.workers for s in worker.queues)
    paused = set(Pause.objects.using(config.database).values_list("queue_name", flat=True))
    ready = ReadyExecution.objects.using(config.database).queue_names()
    return [
        checks.Warning(
            f"Queue {name!r} has ready jobs but no worker polls it: they wait until one does.",
            hint=(
                f"Workers poll {', '.join(repr(s) for s in selectors)}. Add {name!r} "
                "to a worker's queues (ROBUST_QUEUE['workers'] or --queues), or use '*'."
            ),
            id="robust_queue.W021",
        )
        for name in ready
        if name not in paused and not _matches_any(selectors, name)
    ]


def stranded_warnings(using: str) -> list[checks.CheckMessage]:
    """Warning W027 when queued jobs or recurring tasks name a task path
    that no task declares (a renamed or moved task), with counts per path."""
    jobs = stranded_jobs(using)
    recurring = stranded_recurring(using)
    if not jobs and not recurring:
        return []
    lines = [
        f"{p.task_path!r}: {p.jobs} job(s)" + (f" ({p.running} running)" if p.running else "")
        for p in jobs
    ]
    lines += [f"{path!r}: recurring task(s) {', '.join(keys)}" for path, keys in recurring.items()]
    return [
        checks.Warning(
            "Queued jobs or recurring tasks name a task path that no task declares; "
            "workers fail them with UnknownTaskError: " + "; ".join(lines) + ".",
            hint=(
                "A renamed or moved task keeps running its jobs when it declares its old "
                "path: @aliases('old.module.name') over @task. Or move the waiting jobs "
                "to a task from the admin's stranded jobs page."
            ),
            id="robust_queue.W027",
        )
    ]


def _did_you_mean(name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name.rstrip("*"), sorted(known), n=1)
    return f"Did you mean {close[0]!r}? " if close else ""


def _known_queues(using: str) -> set[str]:
    """Queue names that tasks use, as far as Robust Queue can tell."""
    names = {task.queue_name for task in discovery.discover().tasks()}
    for alias in conf.robust_queue_aliases():
        names |= set(task_backends[alias].queues)
    definitions = [*recurrence.declared(), *recurrence.from_settings()[0]]
    names |= {d.queue_name for d in definitions if d.queue_name}
    names |= set(ReadyExecution.objects.using(using).queue_names())
    scheduled = ScheduledExecution.objects.using(using).values_list("queue_name", flat=True)
    return names | set(scheduled.order_by().distinct())


def _matches(selector: str, names: set[str]) -> bool:
    return any(_matches_any((selector,), name) for name in names)


def _matches_any(selectors: tuple[str, ...], name: str) -> bool:
    polled = {queue for queue, _ in plan_for(selectors, [name], set())}
    return None in polled or name in polled
