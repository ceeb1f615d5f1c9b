"""When a recurring task runs: a cron string read in a time zone, or a
fixed interval.

Cron slots are read in the schedule's time zone (the project's
``TIME_ZONE`` when it names none), so ``0 9 * * *`` in ``Europe/Paris``
stays at nine o'clock there across daylight saving changes. Interval slots
are whole multiples of the interval since the Unix epoch (UTC): every
scheduler computes the same slots, which the dedup rows need, and an
hourly interval fires on the hour.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from . import recurrence

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_INTERVAL = timedelta(seconds=1)
TIME_ZONE_MAX_LENGTH = 64
# Slots skipped at most when a scheduler wakes up late (no back-fill).
MAX_SKIPPED_SLOTS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Slots:
    """A cron string (with its time zone, "" for the project's) or an
    interval; exactly one of ``cron`` and ``every``."""

    cron: str = ""
    every: timedelta | None = None
    time_zone: str = ""

    def __str__(self) -> str:
        if self.every is not None:
            return f"every {_duration(self.every)}"
        return f"{self.cron} ({self.time_zone})" if self.time_zone else self.cron

    def problems(self) -> list[str]:
        """What is wrong with this schedule, each as a sentence."""
        if self.every is not None:
            errors = [] if not self.cron else ["give a cron string or an interval, not both."]
            if not isinstance(self.every, timedelta) or self.every < MIN_INTERVAL:
                errors.append(f"the interval must be at least 1 second, not {self.every!r}.")
            if self.time_zone:
                errors.append("an interval runs in UTC: it takes no time zone.")
            return errors
        if not self.cron:
            return ["give a cron string or an interval."]
        errors = [error] if (error := recurrence.schedule_error(self.cron)) else []
        return errors + ([error] if (error := time_zone_error(self.time_zone)) else [])

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after ``moment``."""
        if self.every is not None:
            return EPOCH + ((moment - EPOCH) // self.every + 1) * self.every
        return recurrence.next_time(self.cron, moment, self._zone())

    def previous_before(self, moment: datetime) -> datetime:
        """The last slot strictly before ``moment``."""
        if self.every is not None:
            step = timedelta(microseconds=1)
            return EPOCH + ((moment - step - EPOCH) // self.every) * self.every
        return recurrence.previous_time(self.cron, moment, self._zone())

    def latest(self, first: datetime, now: datetime) -> datetime:
        """The last slot at or before ``now``, counting from ``first``
        (a slot at or before ``now``)."""
        if self.every is not None:
            return max(first, EPOCH + ((now - EPOCH) // self.every) * self.every)
        slot = first
        for _ in range(MAX_SKIPPED_SLOTS):
            following = self.next_after(slot)
            if following > now:
                break
            slot = following
        return slot

    def _zone(self) -> tzinfo | None:
        return zoneinfo.ZoneInfo(self.time_zone) if self.time_zone else None


def time_zone_error(name: object) -> str | None:
    """Why ``name`` is not an IANA time zone ("" is the project's)."""
    if name == "":
        return None
    if not isinstance(name, str) or len(name) > TIME_ZONE_MAX_LENGTH:
        return f"the time zone must be an IANA name such as 'Europe/Paris', not {name!r}."
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"time zone {name!r} is unknown (an IANA name such as 'Europe/Paris')."
    return None


def _duration(every: timedelta) -> str:
    if every % timedelta(seconds=1):
        return f"{every.total_seconds():g} seconds"
    seconds = int(every.total_seconds())
    unit, size = next(
        (unit, size)
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
        if seconds % size == 0
    )
    count = seconds // size
    return f"{count} {unit}{'s' if count != 1 else ''}"
