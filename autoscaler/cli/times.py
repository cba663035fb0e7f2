"""Times and durations on the command line (backtest, convert --compare): RFC 3339, Unix seconds, ``now``,
relative forms, sync periods. What each form means is read by :mod:`autoscaler.values`; the ranges
and the words of the messages are the command line's."""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime

from autoscaler.values.durations import DurationError, parse_duration_text
from autoscaler.values.timestamps import TimestampError, parse_rfc3339_exact

_UNIX = re.compile(r"^\d+(\.\d+)?$")
_RELATIVE = re.compile(r"^(now)?\s*([+-])\s*(\S+)$")


class TimeError(ValueError):
    """A time or duration that cannot be read; the message says which forms are accepted."""


# Times Python's datetime can show (years 1970 to 9999), and durations within that span: anything
# beyond is a typo, and would overflow the arithmetic that follows.
LATEST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z
LONGEST_DURATION = LATEST_TIME


def _duration(text: str, *, plain_seconds: bool = False) -> float | None:
    """Seconds of a duration (None when it is not one); TimeError when it is absurdly long."""
    try:
        seconds = parse_duration_text(text, plain_seconds=plain_seconds)
    except DurationError as exc:
        raise TimeError(str(exc)) from None
    if seconds is not None and seconds > LONGEST_DURATION:
        raise TimeError(f"{text!r}: longer than the time from 1970 to 9999")
    return seconds


def _within_range(text: str, seconds: float) -> float:
    if not 0 <= seconds <= LATEST_TIME:
        raise TimeError(f"{text!r} is out of range: times go from 1970 to 9999")
    return seconds


TIME_FORMS = (
    "RFC 3339 (2024-05-07T09:00:00Z, 2024-05-07T11:00:00+02:00), a date (2024-05-07, midnight UTC), "
    "Unix seconds (1715072400), now, or a duration relative to now (-2h, now-1d12h, now+30m)"
)


def parse_time(text: str, now: float) -> float:
    """Unix seconds for one of :data:`TIME_FORMS`."""
    value = text.strip()
    if value == "now":
        return now
    if _UNIX.match(value):
        return _within_range(text, float(value))  # float() of 400 digits is inf, not an error
    relative = _RELATIVE.match(value)
    if relative is not None:
        _, sign, duration_text = relative.groups()
        seconds = _duration(duration_text)
        if seconds is None:
            raise TimeError(f"{text!r}: {duration_text!r} is not a duration (e.g. 90s, 15m, 2h, 1d12h, 1w)")
        return _within_range(text, now - seconds if sign == "-" else now + seconds)
    if len(value) == 10:
        try:
            day = date.fromisoformat(value)
        except ValueError:
            raise TimeError(f"{text!r} is not a time; use {TIME_FORMS}") from None
        return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
    try:
        seconds = float(parse_rfc3339_exact(value))
    except TimestampError:
        if _is_rfc3339(value + "Z"):
            raise TimeError(f"{text!r} has no time zone: add Z for UTC or an offset such as +02:00") from None
        raise TimeError(f"{text!r} is not a time; use {TIME_FORMS}") from None
    return _within_range(text, seconds)


def _is_rfc3339(text: str) -> bool:
    try:
        parse_rfc3339_exact(text)
    except TimestampError:
        return False
    return True


def parse_step(text: str) -> float:
    """A positive Prometheus duration (``15s``, ``1m``, ``500ms``) or plain seconds (``15``, ``0.5``),
    in seconds, whole milliseconds (Prometheus' resolution)."""
    seconds = _duration(text, plain_seconds=True)
    if seconds is None or math.isnan(seconds):
        raise TimeError(f"{text!r} is not a duration (e.g. 15s, 1m, 500ms, or plain seconds)")
    if seconds <= 0:
        raise TimeError(f"{text!r}: must be longer than 0")
    if round(seconds * 1000) != seconds * 1000:
        raise TimeError(f"{text!r}: must be a whole number of milliseconds")
    return seconds


def parse_duration_option(text: str) -> float | None:
    """A Prometheus duration in seconds for an option such as ``--pod-startup``; None when it is not one."""
    return _duration(text.strip())
