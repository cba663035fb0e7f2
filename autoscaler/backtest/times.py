"""Times and durations on the command line: RFC 3339, Unix seconds, ``now`` and relative forms."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from autoscaler.prometheus.promql import parse_duration

_UNIX = re.compile(r"^\d+(\.\d+)?$")
_RELATIVE = re.compile(r"^(now)?\s*([+-])\s*(\S+)$")
_PLAIN_SECONDS = re.compile(r"^\d+(\.\d+)?$")


class TimeError(ValueError):
    """A time or duration that cannot be read; the message says which forms are accepted."""


# Times Python's datetime can show (years 1970 to 9999), and durations within that span: anything
# beyond is a typo, and would overflow the arithmetic that follows.
LATEST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z
LONGEST_DURATION = LATEST_TIME
_MAX_DURATION_TEXT = 64  # characters; Python will not read thousands of digits into an int


def _duration(text: str) -> float | None:
    """A Prometheus duration in seconds (None when it is not one); TimeError when it is absurdly long."""
    if len(text) > _MAX_DURATION_TEXT:
        raise TimeError(f"{text[:20]!r}…: a duration of more than {_MAX_DURATION_TEXT} characters")
    seconds = parse_duration(text)
    if seconds is not None and seconds > LONGEST_DURATION:
        raise TimeError(f"{text!r}: longer than the time from 1970 to 9999")
    return None if seconds is None else float(seconds)


def _within_range(text: str, seconds: float) -> float:
    if not 0 <= seconds <= LATEST_TIME:
        raise TimeError(f"{text!r} is out of range: times go from 1970 to 9999")
    return seconds


TIME_FORMS = ("RFC 3339 (2024-05-07T09:00:00Z, 2024-05-07T11:00:00+02:00), a date (2024-05-07, midnight UTC), "
              "Unix seconds (1715072400), now, or a duration relative to now (-2h, now-1d12h, now+30m)")


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
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise TimeError(f"{text!r} is not a time; use {TIME_FORMS}") from None
    if parsed.tzinfo is None:
        raise TimeError(f"{text!r} has no time zone: add Z for UTC or an offset such as +02:00")
    return _within_range(text, parsed.timestamp())


def parse_step(text: str) -> float:
    """A positive Prometheus duration (``15s``, ``1m``, ``500ms``) or plain seconds (``15``, ``0.5``),
    in seconds, whole milliseconds (Prometheus' resolution)."""
    value = text.strip()
    seconds = float(value) if _PLAIN_SECONDS.match(value) else _duration(value)
    if seconds is None:
        raise TimeError(f"{text!r} is not a duration (e.g. 15s, 1m, 500ms, or plain seconds)")
    if seconds <= 0:
        raise TimeError(f"{text!r}: must be longer than 0")
    if seconds > LONGEST_DURATION:  # float("9" * 400) is inf
        raise TimeError(f"{text!r}: longer than the time from 1970 to 9999")
    if round(seconds * 1000) != seconds * 1000:
        raise TimeError(f"{text!r}: must be a whole number of milliseconds")
    return seconds


def parse_duration_option(text: str) -> float | None:
    """A Prometheus duration in seconds for an option such as ``--pod-startup``; None when it is not one."""
    return _duration(text.strip())


def format_time(t: float) -> str:
    """RFC 3339 in UTC (``2024-05-07T09:00:15Z``; milliseconds only when there are any)."""
    moment = datetime.fromtimestamp(t, UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_seconds(seconds: float) -> str:
    """A readable span: ``45s``, ``12m30s``, ``3h5m``, ``2d4h``."""
    total = round(seconds)
    if total < 60:
        return f"{seconds:.3g}s" if seconds < 1 else f"{total}s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m{secs}s" if secs else f"{minutes}m"
