"""A large bulk action, run by a worker as a job on the queue itself, at
the top priority on a queue a live worker serves (``bulk_placement.py``).

The job carries the changelist's query string (the filter the operator
confirmed), the operator's user id and the highest job id counted; the
worker rebuilds the same changelist queryset, checks the permission
again, and acts in batches. After each batch it writes its progress to
its own row's return value, which its job page shows while it runs.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.sites import all_sites
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.http import QueryDict

from .. import conf
from ..compat import DEFAULT_TASK_BACKEND_ALIAS, TaskContext, task
from ..models import Job
from . import audit, permissions
from .jobs.bulk_placement import PRIORITY, Placement, place
from .jobs.bulk_verbs import VERBS

CODENAMES = {
    "retry": permissions.RETRY,
    "run_now": permissions.RUN_NOW,
    "discard": permissions.DISCARD,
    "cancel": permissions.CANCEL,
}


def _backend_alias() -> str:
    aliases = conf.robust_queue_aliases()
    return aliases[0] if aliases else DEFAULT_TASK_BACKEND_ALIAS


def _job_admin(site_name: str) -> admin.ModelAdmin[Job]:
    """The jobs admin of the admin site named ``site_name`` (the one the
    operator confirmed on: a project may register Job on its own site)."""
    for site in all_sites:
        if site.name == site_name and Job in site._registry:
            return site._registry[Job]
    raise ImproperlyConfigured(f"No admin site named {site_name!r} registers Job.")


@task(takes_context=True, backend=_backend_alias())
def bulk_operation(
    context: TaskContext,
    verb: str,
    query: str,
    user_id: int,
    max_pk: int,
    count: int,
    site_name: str = "admin",
) -> dict[str, Any]:
    """Retry, run now, cancel or discard every job of the filter ``query`` with an
    id up to ``max_pk``, as user ``user_id`` on admin site ``site_name``;
    returns the outcome."""
    # Imported here: ``django.test`` brings unittest and the test client,
    # which every process of the supervisor tree would otherwise load and
    # keep (this module is loaded with the admin, at start-up).
    from django.test import RequestFactory  # noqa: PLC0415

    model_admin = _job_admin(site_name)
    request = RequestFactory().get("/", QueryDict(query))
    request.user = get_user_model()._default_manager.get(pk=user_id)
    permissions.require(model_admin, request, CODENAMES[verb])
    changelist = model_admin.get_changelist_instance(request)
    jobs = VERBS[verb].bounded(changelist.get_queryset(request), max_pk)
    own = Job.objects.using(jobs.db).filter(result_id=context.task_result.id)

    def progress(changed: int, done: int) -> None:
        own.update(return_value={"changed": changed, "done": done, "counted": count})

    outcome = VERBS[verb].run(jobs, progress=progress)
    message = f"{VERBS[verb].done} {outcome.changed:,} of {outcome.total:,} job(s) on the queue."
    audit.record(user_id, message, deleted=verb == "discard")
    return {"changed": outcome.changed, "done": outcome.total, "counted": count}


def placement() -> Placement:
    """Where the operation would go now, and when it would run."""
    return place(conf.queue_database(), bulk_operation.get_backend().queues)


def enqueue(
    verb: str, query: str, user_id: int, max_pk: int, count: int, site_name: str = "admin"
) -> tuple[Job, Placement]:
    """Put the operation on the queue where it runs next; returns its job
    and where it went."""
    where = placement()
    operation = bulk_operation.using(queue_name=where.queue, priority=PRIORITY)
    result = operation.enqueue(verb, query, user_id, max_pk, count, site_name)
    return Job.objects.using(conf.queue_database()).get(result_id=result.id), where
