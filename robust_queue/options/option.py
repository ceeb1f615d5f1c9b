"""The option protocol: what every option of ``RobustQueueTask`` is.

An option is a field of ``RobustQueueTask`` holding a value (a
``RetryPolicy``, a ``ConcurrencyLimit``, seconds, tags). A task declares it
with the option's decorator stacked over ``@task`` (``@retry(5)``) or with
``@task``'s keyword of the same name, given a dict of the decorator's
arguments (``@task(retry={"attempts": 5})``) or the value itself. One
``Option`` builds and checks both, so both fail alike::

    retry(): 'attempts' must be at least 1 (the first run counts), not 0.
    @task(retry=...): 'attempts' must be at least 1 (the first run counts), not 0.
    @task(retry=...) takes a dict of retry() options, not 'often'.

``OPTION.of(task)`` reads the option from any task: its value, or None
(not set, or not a Robust Queue task).

A leaf: nothing here reads settings or models.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeAlias, TypeVar

from ..compat import Task
from ..exceptions import ConfigurationError

P = ParamSpec("P")
V = TypeVar("V")

if TYPE_CHECKING:
    # Django's Task is not subscriptable at run time (the backport's is).
    TaskDecorator: TypeAlias = Callable[[Task[..., Any]], Task[..., Any]]


@dataclass(frozen=True, slots=True)
class Call:
    """The decorator call that a keyword form stands for: ``unique=True``
    is ``@unique()``, ``tags=["a"]`` is ``@tags("a")``."""

    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def _no_problems(value: object) -> list[str]:
    """The checks of a value that ``make`` has checked already."""
    return []


def _only_dicts(value: object) -> object:
    """No keyword forms but a dict and the value itself (and None)."""
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Option(Generic[P, V]):
    """The ``RobustQueueTask`` field ``name``, which holds a ``kind``."""

    name: str
    kind: type[V]
    # The decorator's arguments -> the value, unchecked; a ValueError says
    # what is wrong with them (a conversion that cannot be made).
    make: Callable[P, V]
    # What is wrong with a value: one message a problem, none if it is fine.
    problems: Callable[[V], list[str]] = _no_problems
    # What the keyword takes, for its error; default: a dict of options.
    takes: str = ""
    # The keyword's other forms: a Call, or None (no option); anything else
    # it returns is checked as a value of ``kind`` or refused.
    keyword: Callable[[Any], object] = _only_dicts
    # The arguments of make: the decorator's and the keyword dict's.
    _signature: inspect.Signature = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Once: every .using() copy of a task reads its options again.
        object.__setattr__(self, "_signature", inspect.signature(self.make))

    def build(self, *args: P.args, **kwargs: P.kwargs) -> V:
        """The value of ``@<name>(*args, **kwargs)``; ``ConfigurationError``
        (``<name>(): ...``) if it is not valid."""
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            # Python's own error, without the name of ``make``.
            raise TypeError(f"{self.name}(): {exc}") from None
        return self._made(f"{self.name}()", args, kwargs)

    def decorator(self) -> Callable[P, TaskDecorator]:
        """``@<name>(...)``: checks its arguments at once, and returns a copy
        of the task it is stacked over with the option set. It takes the
        arguments and the docstring of ``make``."""

        def decorate(*args: P.args, **kwargs: P.kwargs) -> TaskDecorator:
            value = self.build(*args, **kwargs)
            return lambda task: self.set(task, value)

        decorate.__name__ = decorate.__qualname__ = self.name
        decorate.__module__ = self.make.__module__
        decorate.__doc__ = self.make.__doc__
        # help() and inspect show the arguments of make, not *args.
        decorate.__dict__["__signature__"] = self._signature.replace(
            return_annotation="Callable[[Task], Task]"
        )
        return decorate

    def declared(self, value: object) -> V | None:
        """The value of ``@task(<name>=value)``; None: no option.

        ``value`` is None, a dict of the decorator's arguments, one of the
        other forms ``keyword`` knows, or the value itself.
        """
        if value is None:
            return None
        if isinstance(value, Mapping):
            try:
                self._signature.bind(**value)
            except TypeError as exc:
                raise ConfigurationError(self._refusal(value, f" ({exc})")) from exc
            form: object = Call(kwargs=value)
        else:
            form = self.keyword(value)
        where = f"@task({self.name}=...)"
        if form is None:
            return None
        if isinstance(form, Call):
            return self._made(where, form.args, form.kwargs)
        if isinstance(form, self.kind):
            return self._checked(where, form)
        raise ConfigurationError(self._refusal(value))

    def of(self, task: object) -> V | None:
        """The option's value on ``task``; None if it has none, or is no
        Robust Queue task (or no task at all)."""
        value = getattr(task, self.name, None)
        return value if isinstance(value, self.kind) else None

    def set(self, task: object, value: V) -> Task[..., Any]:
        """A copy of ``task`` with the option set to ``value``, or a clear
        error if ``@<name>`` was not stacked over a Robust Queue ``@task``.

        The options are fields of ``RobustQueueTask`` (a frozen
        dataclass), so ``.using()`` copies keep them.
        """
        task = require_task(self.name, task)
        if self.name not in {each.name for each in fields(task)}:
            raise ConfigurationError(
                f"@{self.name} must be stacked over @task for a Robust Queue backend: "
                f"task {task.module_path} runs on backend {task.backend!r}, whose "
                f"tasks ({type(task).__name__}) take no {self.name!r} option."
            )
        changes: dict[str, Any] = {self.name: value}
        return replace(task, **changes)

    def _made(self, where: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> V:
        try:
            value = self.make(*args, **kwargs)
        except ValueError as exc:
            raise ConfigurationError(f"{where}: {exc}") from exc
        return self._checked(where, value)

    def _checked(self, where: str, value: V) -> V:
        problems = self.problems(value)
        if problems:
            raise ConfigurationError(f"{where}: " + " ".join(problems))
        return value

    def _refusal(self, value: object, reason: str = "") -> str:
        takes = self.takes or f"a dict of {self.name}() options"
        return f"@task({self.name}=...) takes {takes}, not {value!r}{reason}."


def require_task(decorator: str, task: object) -> Task[..., Any]:
    """``task`` itself, or a clear error if ``@decorator`` was not stacked
    over ``@task``."""
    if not isinstance(task, Task):
        raise ConfigurationError(
            f"@{decorator} must be stacked over @task, not applied to {task!r}."
        )
    return task
