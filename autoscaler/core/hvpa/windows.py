"""Maintenance time windows: ``HHMMSS±hhmm`` times of day, compared in UTC (A19).

The format is hvpa-controller's Go layout ``150405-0700``: six digits of local time, then a numeric
UTC offset (``220000+0100``, ``033000-0000``). No colons, no ``Z``. Both ends are converted to a UTC
time of day; the window holds ``begin ≤ t ≤ end`` (inclusive at both ends), and when ``end < begin``
it spans midnight and holds every time except those strictly between ``end`` and ``begin``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from autoscaler.core.hvpa.spec import MaintenanceWindow

SECONDS_PER_DAY = 86_400
_TIME_OF_DAY = re.compile(r"^(\d{2})(\d{2})(\d{2})([+-])(\d{2})(\d{2})$")


class WindowTimeError(ValueError):
    """The text is not a ``HHMMSS±hhmm`` time of day."""


def parse_time_of_day(text: str) -> int:
    """UTC seconds since midnight of a ``HHMMSS±hhmm`` time; raise :class:`WindowTimeError`."""
    match = _TIME_OF_DAY.match(text)
    if match is None:
        raise WindowTimeError(
            f'must be a time of day as HHMMSS±hhmm, such as "220000+0100" or "033000-0000", '
            f'not "{text}" (no colons, no Z)'
        )
    hours, minutes, seconds, sign, offset_hours, offset_minutes = match.groups()
    if int(hours) > 23 or int(minutes) > 59 or int(seconds) > 59:
        raise WindowTimeError(f'"{text}": the time must be between 000000 and 235959')
    if int(offset_hours) > 23 or int(offset_minutes) > 59:
        raise WindowTimeError(f'"{text}": the UTC offset must be between -2359 and +2359')
    local = int(hours) * 3600 + int(minutes) * 60 + int(seconds)
    offset = (int(offset_hours) * 3600 + int(offset_minutes) * 60) * (1 if sign == "+" else -1)
    return (local - offset) % SECONDS_PER_DAY


def utc_second_of_day(unix_seconds: float | Fraction) -> int:
    """The UTC second of the day (whole seconds, as Go's layout has no fraction) of a Unix time."""
    return math.floor(unix_seconds) % SECONDS_PER_DAY


def in_window(window: MaintenanceWindow, unix_seconds: float | Fraction) -> bool:
    t = utc_second_of_day(unix_seconds)
    if window.end < window.begin:
        return not (window.end < t < window.begin)
    return window.begin <= t <= window.end
