"""Robust Queue in the Django admin: dashboards and operations.

Jobs (one list per state, a job page, retry / discard / run now), the
overview, concurrency, processes (quiet, stop), recurring tasks, batches
and every operator's actions (queue actions). Every action needs
its own permission (``permissions.py``) on top of ``view_job``.
"""

from django.contrib import admin

from ..models import Batch, Job, Process, QueueAction, RecurringTask
from .batches import BatchAdmin
from .jobs.job_admin import JobAdmin
from .processes import ProcessAdmin
from .queue_actions import QueueActionAdmin
from .recurring.task_admin import RecurringTaskAdmin

admin.site.register(Job, JobAdmin)
admin.site.register(Process, ProcessAdmin)
admin.site.register(RecurringTask, RecurringTaskAdmin)
admin.site.register(Batch, BatchAdmin)
admin.site.register(QueueAction, QueueActionAdmin)
