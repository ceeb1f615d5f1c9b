"""The form of a runtime schedule, checked by the schedules API's rules.

The task is chosen from the registry (never typed as a path); a cron string
or an interval, a time zone, arguments as JSON, queue and priority are
checked by ``schedule_fields.assign`` as the Python API checks them. On a
change, empty arguments keep the stored ones: the page shows them masked,
never in a field that would reveal them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from django import forms
from django.core.exceptions import ValidationError

from ...models import RecurringTask
from ...operations.schedule_fields import assign
from ...operations.schedules import declared_key_error
from ...options.registry import declared_tasks

OWN = "robust_queue."

if TYPE_CHECKING:
    # Generic in the stubs, not subscriptable at run time.
    _ModelForm: TypeAlias = forms.ModelForm[RecurringTask]
else:
    _ModelForm = forms.ModelForm

KEEP = "Leave empty to keep the current arguments (shown masked above)."


class ScheduleForm(_ModelForm):
    task_path = forms.ChoiceField(label="Task")
    args = forms.JSONField(required=False, help_text='A JSON list, such as [1, "a"].')
    kwargs = forms.JSONField(required=False, help_text='A JSON object, such as {"days": 7}.')

    class Meta:
        model = RecurringTask
        fields = (
            *("key", "task_path", "schedule", "interval", "time_zone"),
            *("queue_name", "priority", "description"),
        )
        labels = {"schedule": "Cron schedule", "interval": "Or every"}
        help_texts = {
            "schedule": "Five fields (or @daily, @hourly…); empty for an interval.",
            "interval": "Seconds or HH:MM:SS; slots are multiples of it since 1970 (UTC).",
            "time_zone": "An IANA name such as Europe/Paris; empty for the project's.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "task_path" not in self.fields:
            return  # the page of a row this user may only see
        # The queue's own tasks (the admin's bulk operations) are not offered.
        paths = sorted(
            path for task in declared_tasks() if not (path := task.module_path).startswith(OWN)
        )
        current = self.instance.task_path
        choices = [(p, p) for p in ([current] if current and current not in paths else [])]
        task_field = self.fields["task_path"]
        assert isinstance(task_field, forms.ChoiceField)
        task_field.choices = [("", "---------"), *choices, *((p, p) for p in paths)]
        if self.instance.pk is not None:
            for name in ("args", "kwargs"):
                self.fields[name].help_text = KEEP

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        adding = self.instance.pk is None
        if adding:
            # The form sets the instance's fields after clean(): the
            # checks below read the key now.
            self.instance.key = data["key"]
            if error := declared_key_error(data["key"]):
                raise ValidationError(error)
        errors = assign(self.instance, _fields(data, adding))
        if errors:
            raise ValidationError(errors)
        return data


def _fields(data: dict[str, Any], adding: bool) -> dict[str, Any]:
    fields = {
        "task": data.get("task_path") or "",
        "cron": data.get("schedule") or "",
        "every": data.get("interval"),
        "timezone": data.get("time_zone") or "",
        "queue_name": data.get("queue_name") or "",
        "priority": data.get("priority"),
        "description": data.get("description") or "",
    }
    for name, empty in (("args", []), ("kwargs", {})):
        if data.get(name) is not None:
            fields[name] = data[name]
        elif adding:
            fields[name] = empty
    return fields
